#!/usr/bin/env bash
# Session 11, call 3: the single-token GEMV streaming each warp's rows through a cp.async ring,
# and norms/activations writing the GEMV's int8 input themselves. Quant tests, tg128 A/B
# (one-token GEMV off; rows per warp), decode profile, full CUDA suite.
W=/tmp/w11c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "quant tests"
timeout 120 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*CudaQuant*' > $OUT/cuda-quant-tests.txt 2>&1; echo "quant tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound|Expected|Which|T=" $OUT/cuda-quant-tests.txt | head -30
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen" | grep tg; }
tg X=default
tg HOSTLM_CUDA_GEMV_ONE_TOKEN=0
tg HOSTLM_CUDA_GEMV_ROWS=1
tg HOSTLM_CUDA_GEMV_ROWS=2
tg HOSTLM_CUDA_GEMV_ROWS=4
tg HOSTLM_CUDA_GEMV_ROWS=8
tg X=default
tg HOSTLM_CUDA_GEMV_ONE_TOKEN=0
el "decode profile"
NCU=$NCU RESULTS=$OUT/dp timeout 200 bash tools/device/profile_decode.sh $B $M > $OUT/profile.txt 2>&1; echo "profile rc $?"; head -24 $OUT/profile.txt
el "full suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
el done
