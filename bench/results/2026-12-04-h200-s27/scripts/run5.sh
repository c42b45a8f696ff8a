#!/usr/bin/env bash
# Session 27, call 5 (branch wip/attn-early): the decode attention reads its batch's arrays and
# its warps' first older keys and values before the programmatic wait when the op before it
# was the store of that batch's new keys (HOSTLM_CUDA_ATTENTION_EARLY=0: after it). The new
# test, the CUDA suite, and tg128 alternating on/off on the 9B Q8_0 and the 0.8B Q4_K_M.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w27; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
setsid bash -c "cd $R; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q8.gguf --type Q8_0 > $W/gq.log 2>&1; echo gq rc \$? >> $W/gq.log
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g8.log 2>&1; echo g8 rc \$? >> $W/g8.log" > /dev/null 2>&1 < /dev/null &
waitfor() { for i in $(seq 1 400); do grep -q "$1 rc" $W/$1.log 2>/dev/null && break; sleep 1; done; tail -1 $W/$1.log; }
tg() {  # label, file, bench args, env...
  local label=$1 file=$2 args=$3; shift 3
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $file --backend cuda $args > $W/o.txt 2> $W/e.txt
  echo "$label | $(grep -o 'tg[0-9]* *| *[0-9.]*' $W/o.txt | tr -s ' ' | tr '\n' ' ') | $(grep -o 'a replay ran [0-9.]* us' $W/e.txt) | $(grep -o 'started [0-9.]* us apart' $W/e.txt) | $(grep -o 'recorded, [0-9]* replayed, [0-9]* missed' $W/e.txt)"
  grep -i "error\|abort" $W/e.txt | head -2
}
{
el "new test"
timeout 60 $B/bin/test_cuda_backend --gtest_filter='*AttentionRightAfter*' --gtest_brief=1 2>&1 | grep -E "^\[  |Failure|Expected" | head -8
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "Q8_0 file"; waitfor gq
for r in 1 2 3; do for e in 1 0; do tg "q8 attention-early $e r$r" $W/9b-q8.gguf "-p 0 -n 128 -r 2" HOSTLM_CUDA_ATTENTION_EARLY=$e; done; done
el "0.8B file"; waitfor g8
for r in 1 2; do for e in 1 0; do tg "0.8b attention-early $e r$r" $W/08b-q4km.gguf "-p 0 -n 128 -r 3" HOSTLM_CUDA_ATTENTION_EARLY=$e; done; done
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-200
