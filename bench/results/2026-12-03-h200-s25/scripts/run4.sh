#!/usr/bin/env bash
# Session 25, call 4: the SwiGLU in the epilogue of the one-token gate/up product (branch
# wip/swiglu-epilogue): its test and the whole CUDA suite, then tg128 of the 9B Q8_0, the 9B
# Q4_K_M and the 0.8B Q4_K_M with HOSTLM_CUDA_FUSE_SWIGLU=1 (default) and 0 alternating.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w25b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
for spec in "9b q80 Q8_0 gq8" "0.8b 08b-q4km Q4_K_M g08"; do
  set -- $spec; name=$2; [ $1 = 9b ] && name=9b-$2
  setsid bash -c "cd $R; sleep 3; export PYTHONPATH=$W/gguf-py
    python3 tools/make_shape_gguf.py $1 $W/$name.gguf --type $3 > $W/$4.log 2>&1; echo $4 rc \$? >> $W/$4.log" > /dev/null 2>&1 < /dev/null &
done
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
{
el "new test"
timeout 120 $B/bin/test_cuda_backend --gtest_filter='*Swiglu*' 2>&1 | grep -E "^\[  |Failure|swiglu|down|fused" | head -30
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
wait_for_model
for i in $(seq 1 100); do grep -q "g08 rc" $W/g08.log 2>/dev/null && grep -q "gq8 rc" $W/gq8.log 2>/dev/null && break; sleep 2; done
tail -1 $W/gq8.log; tail -1 $W/g08.log
for r in 1 2; do for f in 9b-q80 9b-q4km 08b-q4km; do for fuse in 1 0; do
  el "tg128 $f, fused swiglu $fuse"
  HOSTLM_CUDA_FUSE_SWIGLU=$fuse HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/$f.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
done; done; done
el done
} 2>&1 | tee $OUT/call4.txt | grep -v "^== tg128" | cut -c1-160
