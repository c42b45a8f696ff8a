#!/usr/bin/env bash
# Session 22, call 3 (branch wip/s22): the whole CUDA suite with conv1d_silu's new row lookup (a
# warp scan in place of a walk over the launch table) and the 16-bit one-token bit-equality
# test; the engine bench at 64 streams with the op profile (call 1 had conv1d_silu at 215.6 ms of
# GPU time) and at 32 and 64 streams without it; 9B Q4_K_M tg128. (Three starts were refused
# before this one, which cost device time; the planned BF16 comparison of pipeline settings
# was dropped to fit what was left, and the rolling pipeline with it.)
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w22c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
wait_for_model
el "engine bench 64 streams, op profile"
HOSTLM_CUDA_PROFILE=1 timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 > $OUT/profile64.txt 2>&1; echo "rc $?"
head -30 $OUT/profile64.txt
el "engine bench 64 streams, no profile"
for r in 1 2; do
HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-250
done
el "tg128 9B Q4_K_M"
for r in 1 2; do
  HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $M --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
done
el "done"
