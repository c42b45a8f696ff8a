#!/usr/bin/env bash
# Session 12, call 2: shared-memory reads of a row issued before its arithmetic (paired Q4_K
# lanes and the general lanes), the register-capped variant removed. Quant and Qwen3.5 CUDA
# tests, tg128 A/B of pairs, the real decode timeline (Nsight Systems), and the Q4_K GEMV's
# scheduler statistics again.
# (The timeline step found no nsys on the machine and did nothing; its tool was then removed.)
W=/tmp/w12b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "quant and model tests"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Quant*:*Qwen*:*Gemv*' > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound|Expected|Which" $OUT/cuda-tests.txt | head -30
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|rror" | grep -E "tg|rror" | tee -a $OUT/tg-ab.txt; }
for i in 1 2; do tg HOSTLM_CUDA_GEMV_PAIRS=0; tg HOSTLM_CUDA_GEMV_PAIRS=1; done
el "timeline"
RESULTS=$OUT/tl timeout 150 bash tools/device/timeline_decode.sh $B $M > $OUT/timeline.txt 2>&1; echo "timeline rc $?"; head -40 $OUT/timeline.txt; rm -f $OUT/tl/trace.csv.gz; gzip -f $OUT/tl/trace.csv
el "ncu"
timeout 90 $NCU --clock-control none --kernel-name regex:gemv_one_token --launch-skip 2000 --launch-count 6 \
  --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats \
  $B/bin/hostlm bench $M --backend cuda -p 16 -n 32 -r 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?"
grep -E "gemv_one_token|Duration|DRAM Throughput|Issued Warp|No Eligible|Registers Per|Warp Cycles Per Issued|stalled" $OUT/ncu.txt | head -60
el done
