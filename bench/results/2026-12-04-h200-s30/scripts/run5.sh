#!/usr/bin/env bash
# Session 30, call 5: the build to be committed (tensor-core attention on by default, weight
# arena): CUDA suite; the paged/logits tests on the FMA kernel (HOSTLM_CUDA_ATTENTION_MMA=0);
# the attention alone with the shapes in the other order (is the 9B shape's slow isolated
# figure an artefact of being first?).
source bench/results/2026-12-04-h200-s30/scripts/env.sh
{
$B/bin/hostlm --version | head -1
el "cuda tests"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/cuda-tests.txt | head -30
el "paged and logits tests on the FMA kernel"
HOSTLM_CUDA_ATTENTION_MMA=0 timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Paged*:*Graph*:*Logits*:*LongContext*:*Engine*' > $OUT/cuda-tests-fma.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/cuda-tests-fma.txt | head -20
el "attention alone"
for m in 1 0; do echo "-- mma $m, shapes 24x4 then 16x4"
  HOSTLM_BENCH_SHAPES=24x4,16x4 HOSTLM_CUDA_PROFILE=1 HOSTLM_CUDA_ATTENTION_MMA=$m timeout 60 $B/bin/bench_cuda_attention 4096 65536 2>&1 | grep -E "^f16|paged_attention"
done
echo "-- mma 1, 16x4 alone, twice"
HOSTLM_BENCH_SHAPES=16x4,16x4 HOSTLM_CUDA_PROFILE=1 timeout 60 $B/bin/bench_cuda_attention 65536 2>&1 | grep -E "^f16|paged_attention"
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-250
