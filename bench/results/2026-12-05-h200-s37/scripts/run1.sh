#!/usr/bin/env bash
# Session 37 (same as session 36), call 1 (main + the parallel split merge, built here for sm_90; llama.cpp built
# on the machine in the background by .devcheck/start-llama.sh, not committed):
#  - the whole CUDA suite: first GPU run of sessions 32-35's CUDA work (chunked delta rule,
#    cuda_backend.cpp split, K = 4 conv1d, IQ/TQ/MXFP4 decoders) and of the new merge;
#  - decode attention alone, GPU time, the splits merged serially (before) and in parallel;
#  - 27B Q8_0 tg128 at 64K, serial / parallel merge in turn;
#  - 27B Q8_0 beside llama.cpp at depth 0 and 65536 (issue 5's missing cell).
source bench/results/2026-12-05-h200-s37/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 27b-q8 27b Q8_0
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual" $OUT/cuda-tests.txt | head -40
el "attention alone: serial merge, parallel merge"
for m in serial parallel serial parallel; do echo "-- merge $m"
  HOSTLM_CUDA_PROFILE=1 HOSTLM_CUDA_ATTENTION_MERGE=$m timeout 60 $B/bin/bench_cuda_attention 4096 16384 65536 2>&1 | grep -E "^f16|paged_attention"
done
wait_file 27b-q8 300; el "27B Q8_0 tg128 at 64K, serial then parallel merge"
for m in serial parallel; do tg 27b-q8 65536 "merge $m" HOSTLM_CUDA_ATTENTION_MERGE=$m; done
el "waiting for llama.cpp"; wait_llama
el "27B Q8_0 beside llama.cpp"; compare 27b-q8 65536 $(left 590)
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
