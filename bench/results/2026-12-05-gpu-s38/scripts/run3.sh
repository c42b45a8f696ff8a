#!/usr/bin/env bash
# Session 38, call 3: Q6_K's 7-64-row products on the pipelined tile kernel (tile_pipelined.cu;
# before: the generic kernel, 86 us for 12288 x 4096 at 64 tokens against Q4_K's 41.5):
#  - the CUDA suite (PipelinedTileProductsOverManyChunks now covers Q6_K, and an odd number of
#    blocks);
#  - the products alone at 16/32/64 tokens, HOSTLM_CUDA_TILE_Q6K=0 (generic kernel) and default;
#  - 9B Q4_K_M 32 and 64 streams, both ways alternating, then a per-shape profile of 64.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual|CUDA error" $OUT/cuda-tests.txt | head -30
for t in 64 32 16; do
  for q6 in 0 1; do
    el "tile products alone, T=$t, HOSTLM_CUDA_TILE_Q6K=$q6"
    HOSTLM_CUDA_TILE_Q6K=$q6 HOSTLM_BENCH_TOKENS=$t HOSTLM_BENCH_SHAPES=4096x4096,12288x4096,4096x12288,8192x4096,248320x4096 \
      timeout 60 $B/bin/bench_cuda_quant q6_K q4_K 2>&1 | grep -E "T="
  done
done
wait_file 9b-q4km 300
for i in 1 2; do
  for q6 in 0 1; do
    el "9B 32, 64 streams, HOSTLM_CUDA_TILE_Q6K=$q6"
    HOSTLM_CUDA_TILE_Q6K=$q6 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
el "9B 64 streams, profile"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $OUT/9b-64-profile.txt 2>&1
grep -E "7-64|delta_rule 1|total" $OUT/9b-64-profile.txt | cut -c1-130
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-250
