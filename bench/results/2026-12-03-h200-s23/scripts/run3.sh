#!/usr/bin/env bash
# Session 23, call 3: the Q4_K tile product (1) with two token warps per 16 rows at 32 and 64
# tokens (HOSTLM_CUDA_TILE_TOKEN_WARPS=1: one, the old form) and (2) with a 96-row block shape
# where 128-row blocks leave SMs idle (HOSTLM_CUDA_TILE_ROWS=128 or 96 forces one). "old" below
# is ROWS=128 with one token warp: the code before this session. The whole CUDA suite; the
# quant tests again with each shape forced; the product alone; the engine bench at 64 and 32
# streams, alternating. Also starts llama.cpp's build (outside the repository) for call 4.
tar xJf .devlibs/libs.tar.xz -C .devlibs
bash .devcheck/start-llama.sh
W=/tmp/w23c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "cuda tests"
timeout 240 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
for v in "96 2" "96 1" "128 1" "128 2"; do set -- $v
  el "quant tests, rows $1, token warps $2"
  HOSTLM_CUDA_TILE_ROWS=$1 HOSTLM_CUDA_TILE_TOKEN_WARPS=$2 timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*CudaQuantTypes*:*CudaMatmul*' 2>&1 | grep -E "^\[  (PASSED|FAILED)|FAILED  \]|Failure" | head -8
done
el "tile product alone"
for r in 1 2; do for v in "0 2" "128 1" "128 2" "96 2"; do set -- $v
  echo "-- rows $1 (0: chosen), token warps $2"; HOSTLM_CUDA_TILE_ROWS=$1 HOSTLM_CUDA_TILE_TOKEN_WARPS=$2 HOSTLM_BENCH_TOKENS=16,32,48,64 timeout 60 $B/bin/bench_cuda_quant q4_K 2>&1 | grep -E "T="
done; done | tee $OUT/quant-bench.txt
wait_for_model
for streams in 64 32; do for r in 1 2; do for v in "0 2" "128 1"; do set -- $v
  el "engine bench $streams streams, rows $1 (0: chosen), token warps $2"
  HOSTLM_CUDA_TILE_ROWS=$1 HOSTLM_CUDA_TILE_TOKEN_WARPS=$2 HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel $streams -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-250
done; done; done
el "engine bench 16 streams"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 16 -p 512 -n 128 2>&1 | grep -E "^\| qwen" | cut -c1-250
tail -2 /tmp/llama17/llama-build.log 2>/dev/null; tail -1 /tmp/llama17/build.log 2>/dev/null
el done
