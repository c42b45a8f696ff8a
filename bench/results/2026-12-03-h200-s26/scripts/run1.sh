#!/usr/bin/env bash
# Session 26, call 1: session 25's SwiGLU epilogue (branch wip/swiglu-epilogue, with the int8
# copy in a spare scratch so that graph replays hit): its test, tg128 of the 9B Q8_0 and
# Q4_K_M with HOSTLM_CUDA_FUSE_SWIGLU=1 and 0 alternating; where the 9B BF16 step's time goes
# (HOSTLM_CUDA_PROFILE) and its tg128; then the whole CUDA suite.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w26; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
setsid bash -c "cd $R; sleep 3; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo gq8 rc \$? >> $W/gq8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log" > /dev/null 2>&1 < /dev/null &
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
{
el "new test"
timeout 60 $B/bin/test_cuda_backend --gtest_filter='*Swiglu*' --gtest_brief=1 2>&1 | grep -E "^\[  |Failure" | head -20
for i in $(seq 1 120); do grep -q "gq8 rc" $W/gq8.log 2>/dev/null && break; sleep 1; done; tail -1 $W/gq8.log
for r in 1 2; do for fuse in 1 0; do
  el "tg128 9b-q80, fused swiglu $fuse"
  HOSTLM_CUDA_FUSE_SWIGLU=$fuse HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $W/9b-q80.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
done; done
wait_for_model
for r in 1 2; do for fuse in 1 0; do
  el "tg128 9b-q4km, fused swiglu $fuse"
  HOSTLM_CUDA_FUSE_SWIGLU=$fuse HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
done; done
el "cuda tests"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -20
el "waiting for the BF16 file"
for i in $(seq 1 300); do grep -q "gb rc" $W/gb.log 2>/dev/null && break; sleep 1; done; tail -1 $W/gb.log
el "9B BF16 op profile"
HOSTLM_CUDA_PROFILE=1 timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 64 -r 1 > $OUT/bf16-profile.txt 2>&1; echo "rc $?"
sed -n '/CUDA op profile/,$p' $OUT/bf16-profile.txt | head -24
el "tg128 9b-bf16"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-170
