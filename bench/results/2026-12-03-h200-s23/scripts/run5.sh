#!/usr/bin/env bash
# Session 23, call 5: the committed form of the Q4_K tile product (two token warps at 33-64
# tokens, one at 17-32; the 96-row shape where it fills the SMs better). The whole CUDA suite;
# the product alone against the old form (HOSTLM_CUDA_TILE_ROWS=128
# HOSTLM_CUDA_TILE_TOKEN_WARPS=1); the engine bench at 64 and 32 streams, alternating.
# (Call 4, llama.cpp's 262K-token run beside hostlm's, never ran: the machine holding call 3's
# llama.cpp build was given back before it, and no start was granted for the next minutes.)
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w23e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "cuda tests"
timeout 240 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
el "tile product alone"
for v in "0 0" "128 1"; do set -- $v
  echo "-- rows $1, token warps $2 (0: chosen)"; HOSTLM_CUDA_TILE_ROWS=$1 HOSTLM_CUDA_TILE_TOKEN_WARPS=$2 HOSTLM_BENCH_TOKENS=16,24,32,48,64 timeout 60 $B/bin/bench_cuda_quant q4_K 2>&1 | grep -E "T="
done | tee $OUT/quant-bench.txt
wait_for_model
for streams in 64 32; do for r in 1 2; do for v in "0 0" "128 1"; do set -- $v
  el "engine bench $streams streams, rows $1, token warps $2 (0: chosen)"
  HOSTLM_CUDA_TILE_ROWS=$1 HOSTLM_CUDA_TILE_TOKEN_WARPS=$2 HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel $streams -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-250
done; done; done
el "tg128 9B Q4_K_M"
timeout 40 $B/bin/hostlm bench $M --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen" | cut -c1-200
el done
