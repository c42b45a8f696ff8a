#!/usr/bin/env bash
# Session 11, calls 1 and 2 (call 1 stopped after its quant tests on an unset W, fixed here): the
# first single-token GEMV with lane-resident activations (gemv_one_token.cu, since replaced).
# Quant tests, tg128 A/B (off, 2 or 4 pieces per lane, 1/2/4 rows per warp), decode profile.
W=/tmp/w11b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "quant tests"
timeout 120 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*CudaQuant*' > $OUT/cuda-quant-tests.txt 2>&1; echo "quant tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound" $OUT/cuda-quant-tests.txt | head -20
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen" | grep tg; }
tg HOSTLM_CUDA_GEMV_ONE_TOKEN=0
tg X=default
tg HOSTLM_CUDA_GEMV_PIECES=2
tg HOSTLM_CUDA_GEMV_ROWS=1
tg HOSTLM_CUDA_GEMV_ROWS=2
tg HOSTLM_CUDA_GEMV_ROWS=4
tg HOSTLM_CUDA_GEMV_PIECES=2 HOSTLM_CUDA_GEMV_ROWS=4
tg HOSTLM_CUDA_GEMV_ONE_TOKEN=0
tg X=default
el "decode profile"
NCU=$NCU RESULTS=$OUT/dp timeout 200 bash tools/device/profile_decode.sh $B $M > $OUT/profile.txt 2>&1; echo "profile rc $?"; head -40 $OUT/profile.txt
el done
