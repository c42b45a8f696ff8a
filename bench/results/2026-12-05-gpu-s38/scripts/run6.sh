#!/usr/bin/env bash
# Session 38, call 6: the CUDA suite on main as it stands after call 5's revert (the code of
# call 3 with the weight-memory test mended and the small-matrix split knob).
source bench/results/2026-12-05-h200-s37/scripts/env.sh
$B/bin/hostlm --version | head -1
timeout 175 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|CUDA error" $OUT/cuda-tests.txt | head -20
