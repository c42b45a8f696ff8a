#!/usr/bin/env bash
# Session 24, call 1: the one-token 16-bit product streamed through shared memory by the bulk
# copy engine (gemv16_staged.cu). The new bit-for-bit test, then the whole CUDA suite; the
# product alone with each ring (HOSTLM_CUDA_GEMV16_RING=0: gemv.cu's register-pipelined
# kernel, the code before); 9B BF16 tg128, alternating. Also starts llama.cpp's build (outside
# the repository) for call 2.
tar xJf .devlibs/libs.tar.xz -C .devlibs
[ -f /tmp/llama17/build.log ] || bash .devcheck/start-llama.sh
W=/tmp/w24; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
[ -f $W/gb.log ] || ( export PYTHONPATH=$W/gguf-py; sleep 5
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.max.sm --format=csv,noheader
el "new test"
timeout 120 $B/bin/test_cuda_backend --gtest_filter='*OneToken16Bit*' 2>&1 | grep -E "^\[  |Failure|row " | head -20
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
el "bf16 product alone"
for r in 1 2; do for ring in 0 1024x3 1024x4 512x4 2048x2; do
  echo "-- ring $ring"; HOSTLM_CUDA_GEMV16_RING=$ring HOSTLM_BENCH_TOKENS=1 timeout 60 $B/bin/bench_cuda_quant bf16 2>&1 | grep -E "T="
done; done | tee $OUT/quant-bench.txt
el "waiting for the BF16 file"
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 400 ] && break; done; tail -1 $W/gb.log
for r in 1 2; do for ring in 0 1024x3 1024x4 512x4; do
  el "tg128 9B BF16, ring $ring"
  HOSTLM_CUDA_GEMV16_RING=$ring HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-220
done; done
el "llama.cpp build"
tail -1 /tmp/llama17/llama-build.log 2>/dev/null; tail -2 /tmp/llama17/build.log
el done
