#!/usr/bin/env bash
# Session 10, call 1: the pipelined Q4_K tile product (tile_q4k.cu). CUDA suite, serving with it
# on and off (HOSTLM_CUDA_TILE_Q4K) alternating on one machine, its op profile and Nsight
# Compute, and a kernel-by-kernel profile of single-stream decode (tools/device/profile_decode.sh).
source "$(dirname "$0")/device_env.sh"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
el "quant tests"
timeout 120 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='CudaQuant*' > $OUT/cuda-quant-tests.txt 2>&1; echo "quant tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|error|bound" $OUT/cuda-quant-tests.txt | head -30
wait_for_model
for k in 0 1 0 1; do el "serving q4k=$k"; HOSTLM_CUDA_TILE_Q4K=$k timeout 100 $B/bin/hostlm bench $M --backend cuda --parallel 8,16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el "op profile 64 streams"
HOSTLM_CUDA_PROFILE=1 timeout 80 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 > $OUT/profile-64.txt 2>&1; head -16 $OUT/profile-64.txt | grep -E "matmul|delta|conv|total|attention"
el "ncu tile q4k"
timeout 120 $NCU --clock-control none -k regex:tile_ --launch-skip 400 --launch-count 12 --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis $B/bin/hostlm bench $M --backend cuda --parallel 32 -p 128 -n 32 > $OUT/ncu-tile-q4k.txt 2>&1; echo "ncu rc $?"
grep -E "tile_q4k_kernel|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Registers Per|Grid Size" $OUT/ncu-tile-q4k.txt | head -40
el "full suite"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
el "decode profile"
if [ $(( $(date +%s) - t0 )) -lt 420 ]; then
  NCU=$NCU RESULTS=$OUT/decode-profile timeout 150 bash tools/device/profile_decode.sh $B $M 2>&1 | head -45
fi
el "prefill tile size against memory"
for mi in 32 16 8 32 16 8; do echo "tile ${mi}Mi"; HOSTLM_CUDA_PREFILL_TILE_MI=$mi timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 16 -r 2 2>&1 | grep -E "^\| qwen|fullest"; done
el "tg128"
timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|fullest"
el done
