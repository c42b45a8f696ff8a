#!/usr/bin/env bash
# Session 12, call 5 (main without call 3's fused norm and add): each block of the
# single-token GEMV copies the token's int8 activations to shared memory once instead of
# every warp reading them from L2 (call 4 showed same-address reads by every block are slow),
# and a decode step's logits rows read in place instead of copied. CUDA quant and model tests,
# tg128 A/B (HOSTLM_CUDA_GEMV_ACTS_SMEM=0 is the previous path), Q4_K GEMV durations.
W=/tmp/w12e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "quant and model tests"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Quant*:*Qwen*:*Gemv*:*Graph*:*Step*' > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound|Expected|Which" $OUT/cuda-tests.txt | head -30
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|rror" | tee -a $OUT/tg-ab.txt; }
for i in 1 2 3; do tg HOSTLM_CUDA_GEMV_ACTS_SMEM=0; tg HOSTLM_CUDA_GEMV_ACTS_SMEM=1; done
el "ncu"
timeout 100 $NCU --clock-control none --kernel-name regex:gemv_one_token --launch-skip 3000 --launch-count 8 \
  --section SpeedOfLight --section SchedulerStats --section LaunchStats \
  $B/bin/hostlm bench $M --backend cuda -p 0 -n 32 -r 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?"
grep -E "gemv_one_token|Duration|DRAM Throughput|Issued Warp|No Eligible|Dynamic Shared" $OUT/ncu.txt | head -60
el done
