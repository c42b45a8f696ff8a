#!/usr/bin/env bash
# Session 30, call 2: the tensor-core split attention with queries and softmax weights as
# hi + lo halves (on by default in this build; HOSTLM_CUDA_ATTENTION_MMA=0 for the FMA kernel;
# HOSTLM_CUDA_ATTENTION_MMA_BLOCKS=4 compiles it for 4 blocks an SM): CUDA suite, the attention
# alone at 4K-64K, then the 27B Q4_K_M and Q8_0 at depth beside llama.cpp.
source bench/results/2026-12-04-h200-s30/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 27b-q4km 27b Q4_K_M; make_file 27b-q8 27b Q8_0
{
$B/bin/hostlm --version | head -1
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/cuda-tests.txt | head -30
grep -E -A3 "Failure" $OUT/cuda-tests.txt | grep -E "worst|Which is|Expected|<=" | head -20
el "attention alone"
for v in "0 3" "1 3" "1 4"; do set -- $v; echo "-- mma $1, blocks $2"
  HOSTLM_CUDA_PROFILE=1 HOSTLM_CUDA_ATTENTION_MMA=$1 HOSTLM_CUDA_ATTENTION_MMA_BLOCKS=$2 timeout 60 $B/bin/bench_cuda_attention 4096 16384 65536 2>&1 | grep -E "^f16|paged_attention"
done
el "waiting for llama.cpp"; wait_llama
wait_file 27b-q4km; el "27B Q4_K_M"; compare 27b-q4km 16384,65536 $(left 400)
wait_file 27b-q8; el "27B Q8_0"; compare 27b-q8 16384,65536 $(left 585)
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
