#!/usr/bin/env bash
# Session 10, call 3: CUDA suite; decode and serving with the 16-byte delta-rule state loads;
# Nsight Compute stall reasons of the Q4_K tile product (32 and 64 tokens) and of the delta rule
# at 64 streams.
source "$(dirname "$0")/device_env.sh"
el "full suite"
timeout 170 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
for i in 1 2; do el "tg128"; timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|fullest"; done
for i in 1 2; do el "serving"; timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el "op profile 64"
HOSTLM_CUDA_PROFILE=1 timeout 80 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 > $OUT/profile-64.txt 2>&1; grep -E "^\| qwen|matmul|delta|conv|total|attention" $OUT/profile-64.txt | head -12
el "ncu tile stalls"
timeout 150 $NCU --clock-control none -k regex:"tile_q4k|gated_delta" --launch-skip 600 --launch-count 8 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis_Tables $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 128 -n 24 > $OUT/ncu-stalls.txt 2>&1; echo "ncu rc $?"
grep -E "(tile_q4k|gated_delta).*Context|Duration|DRAM Throughput|Warp Cycles Per Issued|Issued Warp Per Scheduler|No Eligible|Stall|stalled" $OUT/ncu-stalls.txt | cut -c1-160 | head -60
el done
