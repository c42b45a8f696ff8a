#!/usr/bin/env bash
# Session 13, call 4: the Q4_K tile product requesting its first stages' weights before the
# PDL wait (default) or after (HOSTLM_CUDA_TILE_EARLY=0), alternating; the quant and tile tests.
W=/tmp/w13d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "quant tests"
timeout 200 $B/bin/test_cuda_backend --gtest_filter='CudaQuant*:*Tile*:*Q4k*:CudaQwen35*:*Quant*' --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
for early in 1 0 1 0; do
  el "serving early=$early"
  HOSTLM_CUDA_TILE_EARLY=$early timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel 8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen" | tee -a $OUT/serving-early$early.txt
done
el done
