#!/usr/bin/env bash
# Session 10, call 2: CUDA suite; single-token GEMV load depth 1/2/4 (HOSTLM_CUDA_GEMV_DEPTH) on
# tg128; the four Q4_K tile shapes (HOSTLM_CUDA_TILE_Q4K=1..4, 0 = generic kernel) on serving;
# Nsight Compute of the GEMV; the decode profile with rope, kv_store and norm changed.
source "$(dirname "$0")/device_env.sh"
el "full suite"
timeout 170 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
for d in 1 2 4 1 2 4; do el "tg128 gemv depth $d"; HOSTLM_CUDA_GEMV_DEPTH=$d timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "tg128"; done
for k in 1 2 3 4 0 1 2 3 4; do el "serving shape $k"; HOSTLM_CUDA_TILE_Q4K=$k timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el "ncu gemv depth 2"
timeout 100 $NCU --clock-control none -k regex:gemv --launch-skip 3000 --launch-count 6 --section SpeedOfLight --section Occupancy --section WarpStateStats $B/bin/hostlm bench $M --backend cuda -p 16 -n 32 -r 1 > $OUT/ncu-gemv.txt 2>&1; echo "ncu rc $?"
grep -E "gemv.*Context|Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Stall" $OUT/ncu-gemv.txt | head -40
el "decode profile"
if [ $(( $(date +%s) - t0 )) -lt 430 ]; then
  NCU=$NCU RESULTS=$OUT/decode-profile timeout 140 bash tools/device/profile_decode.sh $B $M 2>&1 | head -22
fi
el done
