#!/usr/bin/env bash
# Session 12, call 1: Q4_K/Q5_K lanes taking pieces in pairs in the single-token GEMV, and a
# register cap for three blocks per SM. CUDA suite, tg128 A/B of both switches, and Nsight
# Compute scheduler/warp-state sections of the Q4_K GEMV with and without pairs.
W=/tmp/w12a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "full suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound|Expected|Which" $OUT/cuda-tests.txt | head -30
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|rror" | grep -E "tg|rror" | tee -a $OUT/tg-ab.txt; }
for i in 1 2; do
  tg HOSTLM_CUDA_GEMV_PAIRS=0
  tg HOSTLM_CUDA_GEMV_PAIRS=1
  tg HOSTLM_CUDA_GEMV_PAIRS=0 HOSTLM_CUDA_GEMV_MIN_BLOCKS=3
  tg HOSTLM_CUDA_GEMV_PAIRS=1 HOSTLM_CUDA_GEMV_MIN_BLOCKS=3
done
for p in 0 1; do
  el "ncu pairs=$p"
  HOSTLM_CUDA_GEMV_PAIRS=$p timeout 90 $NCU --clock-control none --kernel-name regex:gemv_one_token --launch-skip 2000 --launch-count 4 \
    --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
    $B/bin/hostlm bench $M --backend cuda -p 16 -n 32 -r 1 > $OUT/ncu-pairs$p.txt 2>&1; echo "ncu rc $?"
  grep -E "gemv_one_token|Duration|DRAM Throughput|Issue Slots Busy|Issued Warp|No Eligible|Active Warps Per|Achieved Occupancy|Registers Per|Block Limit|Grid Size|Block Size|Warp Cycles Per Issued|Memory Throughput|Compute \(SM\)" $OUT/ncu-pairs$p.txt | head -80
done
el done
