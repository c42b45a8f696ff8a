#!/usr/bin/env bash
# Written in session 39 (no GPU could be had; not yet run). Build A = main (.devcarry/h200.tar.xz),
# build B = branch wip/ksplit (.devcarry/h200-b.tar.xz, paths renamed to build-h200-b):
#   - PRMT selectors from a kernel parameter (SASS 637 -> 574 instructions a warp and chunk);
#   - HOSTLM_CUDA_TILE_K_SLICES=32,64 (off by default): two warps per 16 rows each take half of
#     a chunk's sub-block pairs, instead of two token warps that both expand the whole chunk
#     (434 instructions a warp and chunk at 64 tokens against 574);
#   - grouped tile launches (on by default; HOSTLM_CUDA_TILE_GROUPS=0 turns them off): the
#     products of one input (a delta-rule layer's qkv, z, alpha, beta; q, k, v; gate, up) in
#     one launch per type and block shape, each matrix with its own plan.
# Correctness first (CUDA suite on B with k slices on in every bucket, the product tests with
# them off), then products alone and the 9B at 32 / 64 streams, alternating.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
tar xJf .devcarry/h200-b.tar.xz; B2=$R/build-h200-b
echo "{\"source_dir\": \"$R\"}" > $B2/hostlm-build-tree.json
with_build() { local b=$1; shift; env HOSTLM_BUILD_DIR=$b HOSTLM_LIBRARY=$b/lib/libhostlm.so LD_LIBRARY_PATH=$b/lib:$LD_LIBRARY_PATH "$@"; }
make_file 9b-q4km 9b Q4_K_M
{
el "cuda tests, B, k slices 16,32,64"
with_build $B2 HOSTLM_CUDA_TILE_K_SLICES=16,32,64 timeout 300 $B2/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests-b-ks.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests-b-ks.txt | head -20
el "cuda product tests, B, default"
with_build $B2 timeout 120 $B2/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='CudaQuant*:*Logits*' > $OUT/cuda-tests-b.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests-b.txt | head -20
for t in 64 32 16; do
  for v in "A $B" "B $B2" "B-ks $B2 HOSTLM_CUDA_TILE_K_SLICES=16,32,64"; do
    set -- $v
    el "products alone, T=$t, $1"
    with_build $2 $3 HOSTLM_BENCH_TOKENS=$t timeout 60 $2/bin/bench_cuda_quant q4_K q6_K 2>&1 | grep -E "T="
  done
done
wait_file 9b-q4km 300
for i in 1 2; do
  for v in "A $B" "B-nogroups $B2 HOSTLM_CUDA_TILE_GROUPS=0" "B $B2" "B-ks $B2 HOSTLM_CUDA_TILE_K_SLICES=32,64" "B-ks64 $B2 HOSTLM_CUDA_TILE_K_SLICES=64"; do
    set -- $v
    el "9B 32, 64 streams, $1 $3"
    with_build $2 $3 timeout 60 $2/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
# Prefill tiles small enough to stay in L2 (50 MiB on an H100): the expansion's writes and the
# GEMM's reads of them might not reach DRAM (docs/cuda-tuning.md measured more as a little
# faster, before the pipelined decode kernels; never with tiles this small). 1024 tokens: a
# longer step converts its activations again for every tile (QuantMatmul::prefill).
for mi in 32 8 4; do
  el "pp1024, HOSTLM_CUDA_PREFILL_TILE_MI=$mi"
  with_build $B2 HOSTLM_CUDA_PREFILL_TILE_MI=$mi timeout 60 $B2/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 1024 -n 0 -r 2 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
el "profile, 64 streams, B k slices 32,64"
with_build $B2 HOSTLM_CUDA_TILE_K_SLICES=32,64 HOSTLM_CUDA_PROFILE=2 timeout 60 $B2/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $OUT/9b-64-profile-ks.txt 2>&1
head -45 $OUT/9b-64-profile-ks.txt | cut -c1-130
el done
} 2>&1 | tee $OUT/run1.txt | cut -c1-250
