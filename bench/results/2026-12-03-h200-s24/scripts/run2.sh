#!/usr/bin/env bash
# Session 24, call 2: the staged one-token 16-bit product again, now also with each lane
# filling its own 16-byte pieces by cp.async (no mbarrier, no warp sync) and the activations
# loaded before the wait for the weights (call 1's bulk-copy form was correct and slower).
# The new test, the whole CUDA suite, the product alone with each ring (0: gemv.cu's kernel,
# the code before), 9B BF16 tg128 alternating. Starts llama.cpp's build and the other shape
# files in new sessions so that they outlive this call, for call 3.
tar xJf .devlibs/libs.tar.xz -C .devlibs
[ -f /tmp/llama17/build.log ] || setsid bash .devcheck/start-llama.sh > /dev/null 2>&1 < /dev/null &
W=/tmp/w24; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
setsid bash -c "cd $R; sleep 5; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo gq8 rc \$? >> $W/gq8.log
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo g08 rc \$? >> $W/g08.log" > /dev/null 2>&1 < /dev/null &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then ldd $B/lib/libhostlm_cuda.so | grep "not found"; fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "new test"
timeout 120 $B/bin/test_cuda_backend --gtest_filter='*OneToken16Bit*' 2>&1 | grep -E "^\[  |Failure|row " | head -20
el "bf16 product alone"
for r in 1 2; do for ring in 0 1024x3 1024x4 512x4 512x6 bulk1024x3; do
  echo "-- ring $ring"; HOSTLM_CUDA_GEMV16_RING=$ring HOSTLM_BENCH_TOKENS=1 timeout 60 $B/bin/bench_cuda_quant bf16 f16 2>&1 | grep -E "T="
done; done | tee $OUT/quant-bench.txt
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
el "waiting for the BF16 file"
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 400 ] && break; done; tail -1 $W/gb.log
for r in 1 2; do for ring in 0 1024x3 512x6 1024x4; do
  el "tg128 9B BF16, ring $ring"
  HOSTLM_CUDA_GEMV16_RING=$ring HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-220
done; done
el "llama.cpp build, files"
tail -1 /tmp/llama17/llama-build.log 2>/dev/null; tail -1 /tmp/llama17/build.log; tail -1 $W/gguf.log; tail -1 $W/gq8.log 2>/dev/null
el done
