#!/usr/bin/env bash
# Session 13, call 6 (final code): the full CUDA suite, then serving at 1, 8, 32 and 64
# streams and the cached-prefix TTFT on the 9B Q4_K_M shape.
W=/tmp/w13f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "full suite"
timeout 280 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|default vs exact" $OUT/cuda-tests.txt | head -30
wait_for_model
el "serving"
timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|engine:" | tee $OUT/serving.txt
el "ttft"
timeout 90 $B/bin/hostlm bench $M --backend cuda --ttft-prefix 8192 --ttft-new 32 2>&1 | tail -4 | tee $OUT/ttft.txt
el done
