#!/usr/bin/env bash
# Session 27, call 1 (branch wip/ablate + the L2 prefetch): the CUDA suite on the landed form,
# where a 9B decode step's time goes (HOSTLM_CUDA_ABLATE skips op kinds' launches: timing only,
# the output is wrong), and the 16-bit ring's L2 prefetch at several sizes.
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
  echo "$label | $(grep -o 'tg128 *| *[0-9.]*' $W/o.txt | tr -s ' ') | $(grep -o 'a replay ran [0-9.]* us' $W/e.txt) | $(grep -o 'started [0-9.]* us apart' $W/e.txt) | $(grep -o 'recorded, [0-9]* replayed, [0-9]* missed' $W/e.txt) | $(grep -o "pass over a replayed step took [0-9.]* us" $W/e.txt)"
  grep -i "error\|abort" $W/e.txt | head -2
}
NORMS=add_rms_norm,rms_norm
DELTA=gated_delta_rule,gated_delta_rule_norm,gated_rms_norm
CONV=conv1d_silu
ATTN=rope,qk_norm_rope,qk_norm_rope_store,kv_store,paged_attention,mul_sigmoid
REST=swiglu,add
ALL=$NORMS,$DELTA,$CONV,$ATTN,$REST
{
el "new tests"
timeout 90 $B/bin/test_cuda_backend --gtest_filter='*OneToken16Bit*' --gtest_brief=1 2>&1 | grep -E "^\[  |Failure" | head -8
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "Q8_0 file"; waitfor gq
for r in 1 2; do
  tg "q8 base r$r" $W/9b-q8.gguf X=1
  tg "q8 -norms" $W/9b-q8.gguf HOSTLM_CUDA_ABLATE=$NORMS
  tg "q8 -delta" $W/9b-q8.gguf HOSTLM_CUDA_ABLATE=$DELTA
  tg "q8 -attn" $W/9b-q8.gguf HOSTLM_CUDA_ABLATE=$ATTN
  tg "q8 -all" $W/9b-q8.gguf HOSTLM_CUDA_ABLATE=$ALL
done
el "BF16 file"; waitfor gb
tg "bf16 base" $W/9b-bf16.gguf X=1
tg "bf16 -norms" $W/9b-bf16.gguf HOSTLM_CUDA_ABLATE=$NORMS
tg "bf16 -delta" $W/9b-bf16.gguf HOSTLM_CUDA_ABLATE=$DELTA
tg "bf16 -conv" $W/9b-bf16.gguf HOSTLM_CUDA_ABLATE=$CONV
tg "bf16 -attn" $W/9b-bf16.gguf HOSTLM_CUDA_ABLATE=$ATTN
tg "bf16 -all" $W/9b-bf16.gguf HOSTLM_CUDA_ABLATE=$ALL
for r in 1 2; do for mb in 0 8 16 24 32; do
  tg "bf16 prefetch ${mb}MB r$r" $W/9b-bf16.gguf HOSTLM_CUDA_L2_PREFETCH_MB=$mb
done; done
el "prefetch tests"
HOSTLM_CUDA_L2_PREFETCH_MB=16 timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests-prefetch.txt 2>&1; echo "cuda tests (prefetch 16) rc $?"
grep -E "^\[  (PASSED|FAILED)|FAILED  \]" $OUT/cuda-tests-prefetch.txt | head -5
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-230
