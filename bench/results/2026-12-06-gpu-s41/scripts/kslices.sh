#!/usr/bin/env bash
# Sourced by run1.sh / run1h.sh (env.sh already sourced, $W/9b-q4km.gguf made): k-slice warps
# again now that their accumulators stay in registers (session 41: ptxas gave the 64-token
# blocks a 128-160-byte stack before, 0 now except the wide shape's, which is held to 128
# registers), and per shape ("n64": the narrow 96-row blocks alone at 64 tokens). Products
# alone at 64 and 32 tokens, then the 9B at 32 and 64 streams, each setting in turn.
settings=("default" "K_SLICES=32,64" "K_SLICES=32,n64")
for t in 64 32; do
  for v in "${settings[@]}"; do
    el "products alone, T=$t, $v"
    e=(); [ "$v" != default ] && e=(HOSTLM_CUDA_TILE_$v)
    env "${e[@]}" HOSTLM_BENCH_TOKENS=$t timeout 40 $B/bin/bench_cuda_quant q4_K q6_K 2>&1 | grep -E "T="
  done
done
for i in 1 2; do
  for v in "${settings[@]}"; do
    el "9B 32, 64 streams, $v, round $i"
    e=(); [ "$v" != default ] && e=(HOSTLM_CUDA_TILE_$v)
    env "${e[@]}" timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
el "cuda product tests with k slices 16,32,64 (both shapes)"
HOSTLM_CUDA_TILE_K_SLICES=16,32,64 timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Tile*:*Q4k*:*Q6k*:*Group*:*Quant*' > $OUT/cuda-tests-ks.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests-ks.txt | head -12
