#!/usr/bin/env bash
# Session 31, call 1: branch wip/attention-mma-stream rebased on main (0da1dbd).
#  - the CUDA suite with the default kernels (main's untested refactors a56ff2f, 924d3bc);
#  - the attention tests with the streaming tensor-core kernel (HOSTLM_CUDA_ATTENTION_MMA_STREAM=1);
#  - the attention alone, register vs streaming kernel; 27B Q8_0 tg128 at 64K alternating;
#  - 9B Q4_K_M tg128 at depth 0, tensor-core vs FMA attention, alternating;
#  - 64 streams on the 9B Q4_K_M: aggregate, and the op profile of a prefill-only run.
source bench/results/2026-12-04-h200-s31/scripts/env.sh
make_file 27b-q8 27b Q8_0
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
el "cuda tests"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/cuda-tests.txt | head -30
el "attention tests on the streaming kernel"
HOSTLM_CUDA_ATTENTION_MMA_STREAM=1 timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Paged*:*Graph*:*Logits*:*LongContext*:*Engine*' > $OUT/cuda-tests-stream.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/cuda-tests-stream.txt | head -20
el "attention alone"
for s in 0 1 0 1; do echo "-- stream $s"
  HOSTLM_CUDA_ATTENTION_MMA_STREAM=$s timeout 60 $B/bin/bench_cuda_attention 4096 16384 65536 2>&1 | grep -E "^f16"
done
wait_file 9b-q4km 60; el "9B Q4_K_M tg128 d0, mma 0/1"
for m in 0 1 0 1; do tg 9b-q4km 0 "mma $m" HOSTLM_CUDA_ATTENTION_MMA=$m; done
wait_file 27b-q8 60; el "27B Q8_0 tg128 at 64K, stream 0/1"
for s in 0 1 0 1; do tg 27b-q8 65536 "stream $s" HOSTLM_CUDA_ATTENTION_MMA_STREAM=$s; done
el "64 streams"
for i in 1 2; do timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el "64 streams, prefill profile"
HOSTLM_CUDA_PROFILE=1 timeout 80 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 1 > $OUT/profile-64-prefill.txt 2>&1; head -40 $OUT/profile-64-prefill.txt
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-250
