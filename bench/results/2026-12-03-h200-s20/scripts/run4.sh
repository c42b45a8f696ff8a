#!/usr/bin/env bash
# Session 20, call 4: no automatic prefix-cache reserve on a GPU for running contexts of 65,536
# tokens or more (memory_plan.cpp). The whole CUDA suite (with the new
# CudaEngineMemory.LongWindowsHaveNoCacheReserveAndStillReusePrefixes); the plan `hostlm serve`
# prints for the 9B Q4_K_M shape at 262,144 tokens against tools/context_memory.py's; then the
# engine bench's 262,112-token prompt and 32 generated tokens with the GPU memory polled
# (nvidia-smi every 0.5 s; call 3's run of main 983a337, with the reserve, peaked at 15,729 MiB).
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w20d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "full CUDA suite"
timeout 230 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
wait_for_model
el "plan at 262144 tokens"
PYTHONPATH=$W/gguf-py timeout 120 python3 tools/context_memory.py --check $M --ctx 262144 --hostlm $B/bin/hostlm --backend cuda > $OUT/plan-check.txt 2>&1; echo "plan check rc $?"
grep -E "^\| 262144|equals|DIFFERS" $OUT/plan-check.txt
el "262,112-token prompt, 32 generated"
( while true; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits >> $W/mem.txt; sleep 0.5; done ) & P=$!
timeout 150 $B/bin/hostlm bench $M --backend cuda --parallel 1 -p 262112 -n 32 -b 2048 > $W/lc.txt 2> $W/lc.err; echo "bench rc $?"
kill $P
echo "peak GPU memory $(sort -n $W/mem.txt | tail -1) MiB"
tail -1 $W/lc.txt
grep -iE "KV|total|plan" $W/lc.err | head -8
el done
