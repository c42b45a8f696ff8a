#!/usr/bin/env bash
# Session 38, call 4: the two 32-row products of each delta-rule layer take 12.8 us each at 64
# tokens (0.6 ms of a 12.9 ms step): is it the 16-way split's reduction or the chunks? Their
# splits capped by HOSTLM_CUDA_TILE_SMALL_SPLITS (0: as many as fill the GPU), alone and in
# the 64-stream bench; then 64 streams with 4,096- and 8,192-token engine steps.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
for s in 0 8 4 2 1; do
  el "32-row products alone, T=64, HOSTLM_CUDA_TILE_SMALL_SPLITS=$s"
  HOSTLM_CUDA_TILE_SMALL_SPLITS=$s HOSTLM_BENCH_TOKENS=64 HOSTLM_BENCH_SHAPES=32x4096,64x4096 \
    timeout 60 $B/bin/bench_cuda_quant q4_K q6_K 2>&1 | grep -E "T="
done
wait_file 9b-q4km 300
for i in 1 2; do
  for s in 0 4 2; do
    el "9B 64 streams, HOSTLM_CUDA_TILE_SMALL_SPLITS=$s"
    HOSTLM_CUDA_TILE_SMALL_SPLITS=$s timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
for b in 4096 8192; do
  el "9B 64 streams, -b $b"
  timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b $b 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
el done
} 2>&1 | tee $OUT/call4.txt | cut -c1-250
