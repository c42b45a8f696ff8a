#!/usr/bin/env bash
# Session 11, call 4: as call 3 with the shared-memory attribute set within the kernel's limit.
# Quant tests, tg128 A/B (one-token GEMV and fused quantization each on/off; rows per warp),
# decode profile, full CUDA suite.
W=/tmp/w11d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "quant tests"
timeout 120 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*CudaQuant*' > $OUT/cuda-quant-tests.txt 2>&1; echo "quant tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound|Expected|Which|T=|exception" $OUT/cuda-quant-tests.txt | head -30
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|rror" | grep -E "tg|rror"; }
for i in 1 2; do
tg X=default
tg HOSTLM_CUDA_FUSE_QUANTIZE=0
tg HOSTLM_CUDA_GEMV_ONE_TOKEN=0
tg HOSTLM_CUDA_GEMV_ONE_TOKEN=0 HOSTLM_CUDA_FUSE_QUANTIZE=0
done
for r in 2 4 8 16; do tg HOSTLM_CUDA_GEMV_ROWS=$r; done
el "decode profile"
NCU=$NCU RESULTS=$OUT/dp timeout 200 bash tools/device/profile_decode.sh $B $M > $OUT/profile.txt 2>&1; echo "profile rc $?"; head -24 $OUT/profile.txt
el "full suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
el done
