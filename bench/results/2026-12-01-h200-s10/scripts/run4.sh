#!/usr/bin/env bash
# Session 10, call 4: the Q4_K tile product with lane-split scale decoding, precomputed copy
# sources and a one-round-trip-per-split reduction. CUDA suite, tg128, serving, op profile, ncu.
source "$(dirname "$0")/device_env.sh"
el "quant tests"
timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='CudaQuant*' > $OUT/cuda-quant-tests.txt 2>&1; echo "quant tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound" $OUT/cuda-quant-tests.txt | head -20
wait_for_model
for i in 1 2; do el "serving"; timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el "tg128"; timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|fullest"
el "op profile 64"
HOSTLM_CUDA_PROFILE=1 timeout 80 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 > $OUT/profile-64.txt 2>&1; grep -E "^\| qwen|matmul|delta|conv|total|attention" $OUT/profile-64.txt | head -12
el "ncu tile"
timeout 100 $NCU --clock-control none -k regex:"tile_q4k" --launch-skip 600 --launch-count 8 --section SpeedOfLight --section InstructionStats --section SchedulerStats $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 128 -n 24 > $OUT/ncu-tile.txt 2>&1; echo "ncu rc $?"
grep -E "tile_q4k.*Context|Duration|DRAM Throughput|Issued Warp Per Scheduler|Executed Instructions  " $OUT/ncu-tile.txt | cut -c1-150 | head -40
el "full suite"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
el done
