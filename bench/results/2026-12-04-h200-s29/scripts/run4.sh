#!/usr/bin/env bash
# Session 29, call 4: the split decode attention with each step's key rows requested one step
# ahead (HOSTLM_CUDA_ATTENTION_PIPELINE, on by default in this build) and more splits
# (HOSTLM_CUDA_ATTENTION_WAVES), first alone (bench_cuda_attention, 9B and 27B head shapes,
# 4K-64K context), then in the 27B Q4_K_M and 9B Q8_0 shapes at depth beside llama.cpp; and
# the bench's depth prefix now held in host memory (GPU memory at depth). CUDA suite first.
source bench/results/2026-12-04-h200-s29/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 27b-q4km 27b Q4_K_M; make_file 9b-q8 9b Q8_0
{
$B/bin/hostlm --version | head -1
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "attention alone"
for v in "0 2" "1 2" "0 4" "1 4" "1 8"; do set -- $v
  echo "-- pipeline $1, waves $2"
  HOSTLM_CUDA_ATTENTION_PIPELINE=$1 HOSTLM_CUDA_ATTENTION_WAVES=$2 timeout 60 $B/bin/bench_cuda_attention 4096 16384 65536
done
echo "-- 32 sequences at 4096, pipeline 0 / 1"
HOSTLM_BENCH_SEQS=32 HOSTLM_CUDA_ATTENTION_PIPELINE=0 timeout 60 $B/bin/bench_cuda_attention 4096
HOSTLM_BENCH_SEQS=32 HOSTLM_CUDA_ATTENTION_PIPELINE=1 timeout 60 $B/bin/bench_cuda_attention 4096
el "waiting for llama.cpp"; wait_llama
wait_file 27b-q4km; el "27B Q4_K_M"; compare 27b-q4km 16384,65536 $(left 560)
wait_file 9b-q8; el "9B Q8_0"; compare 9b-q8 65536 $(left 575)
el done
} 2>&1 | tee $OUT/call4.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw && rm -rf */raw
