#!/usr/bin/env bash
# Session 27, call 2: the attention's output gate in the attention kernels
# (HOSTLM_CUDA_FUSE_GATE=0: mul_sigmoid apart): its test, the CUDA suite, 9B Q8_0 and BF16
# tg128 alternating on/off, and the attention ops' shares of a Q8_0 step by ablation
# (HOSTLM_CUDA_ABLATE, branch wip/ablate: timing only).
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w27; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
setsid bash -c "cd $R; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q8.gguf --type Q8_0 > $W/gq.log 2>&1; echo gq rc \$? >> $W/gq.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log" > /dev/null 2>&1 < /dev/null &
waitfor() { for i in $(seq 1 400); do grep -q "$1 rc" $W/$1.log 2>/dev/null && break; sleep 1; done; tail -1 $W/$1.log; }
tg() {  # label, file, env...
  local label=$1 file=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $file --backend cuda -p 0 -n 128 -r 2 > $W/o.txt 2> $W/e.txt
  echo "$label | $(grep -o 'tg128 *| *[0-9.]*' $W/o.txt | tr -s ' ') | $(grep -o 'a replay ran [0-9.]* us' $W/e.txt) | $(grep -o 'started [0-9.]* us apart' $W/e.txt) | $(grep -o 'recorded, [0-9]* replayed, [0-9]* missed' $W/e.txt)"
  grep -i "error\|abort" $W/e.txt | head -2
}
{
el "gate test"
timeout 90 $B/bin/test_cuda_backend --gtest_filter='*Gated*:*CudaPagedKv*' --gtest_brief=1 2>&1 | grep -E "^\[  |Failure|Expected|Which" | head -12
el "cuda tests"
timeout 240 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "Q8_0 file"; waitfor gq
for r in 1 2 3; do for g in 1 0; do tg "q8 gate-in-attention $g r$r" $W/9b-q8.gguf HOSTLM_CUDA_FUSE_GATE=$g; done; done
tg "q8 apart -paged_attention" $W/9b-q8.gguf HOSTLM_CUDA_FUSE_GATE=0 HOSTLM_CUDA_ABLATE=paged_attention
tg "q8 apart -mul_sigmoid" $W/9b-q8.gguf HOSTLM_CUDA_FUSE_GATE=0 HOSTLM_CUDA_ABLATE=mul_sigmoid
tg "q8 apart -qk_norm_rope_store" $W/9b-q8.gguf HOSTLM_CUDA_FUSE_GATE=0 HOSTLM_CUDA_ABLATE=qk_norm_rope_store
el "BF16 file"; waitfor gb
for r in 1 2; do for g in 1 0; do tg "bf16 gate-in-attention $g r$r" $W/9b-bf16.gguf HOSTLM_CUDA_FUSE_GATE=$g; done; done
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-200
