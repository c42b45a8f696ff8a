#!/usr/bin/env bash
# Session 38, call 5: the pipelined tile kernel with each warp on two groups of 16 rows
# (HOSTLM_CUDA_TILE_ROW_GROUPS=2, for 32 and 64 tokens): each activation fragment read from
# shared memory then feeds four products instead of two (call 4: a 16-chunk product takes
# ~2.6-2.9 us a chunk whatever its rows, and a block's activation reads are 256 KB a chunk).
#  - the CUDA suite as it is (default shapes; the kernel's code was restructured), then its
#    quantized-product tests with the two-group shapes;
#  - products alone at 32/64 tokens, both ways; 9B Q4_K_M 32 and 64 streams, alternating.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual|CUDA error" $OUT/cuda-tests.txt | head -20
el "cuda quant tests, two row groups"
HOSTLM_CUDA_TILE_ROW_GROUPS=2 timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Quant*:*Tile*:*Expert*:*Moe*' > $OUT/cuda-tests-r2.txt 2>&1; echo "r2 tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual|CUDA error" $OUT/cuda-tests-r2.txt | head -20
for t in 64 32; do
  for g in 1 2; do
    el "products alone, T=$t, HOSTLM_CUDA_TILE_ROW_GROUPS=$g"
    HOSTLM_CUDA_TILE_ROW_GROUPS=$g HOSTLM_BENCH_TOKENS=$t HOSTLM_BENCH_SHAPES=4096x4096,12288x4096,4096x12288,8192x4096,248320x4096 \
      timeout 60 $B/bin/bench_cuda_quant q4_K q6_K 2>&1 | grep -E "T="
  done
done
wait_file 9b-q4km 300
for i in 1 2; do
  for g in 1 2; do
    el "9B 32, 64 streams, HOSTLM_CUDA_TILE_ROW_GROUPS=$g"
    HOSTLM_CUDA_TILE_ROW_GROUPS=$g timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-250
