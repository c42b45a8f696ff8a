#!/usr/bin/env bash
# Session 38, call 1: the CUDA suite (3b8213e and 9c00eed not yet run on a GPU), then profiles
# whose rows leave out each op's first call (session 37's "slow Q6_K and F32 products" were the
# warm-up run's first launches: the bench's untimed run is in the profile, and 217 ms of wall
# for four 29 ms runs says so), with the recurrent ops split into decode and prompt rows:
#  - 9B Q4_K_M pp512 and 64 streams (PROFILE=2), 64 streams twice unprofiled;
#  - the tile products alone at 16/32/64 tokens (the decode step's bottleneck at 64 streams);
#  - 35B-A3B Q4_K_M pp512 profile and pp512/tg128 (hostlm alone) after 9c00eed.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
make_file 35b-q4km 35b-a3b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual|CUDA error" $OUT/cuda-tests.txt | head -30
for t in 64 32 16; do
  el "tile products alone, T=$t"
  HOSTLM_BENCH_TOKENS=$t timeout 60 $B/bin/bench_cuda_quant q4_K q6_K 2>&1 | grep -E "T="
done
wait_file 9b-q4km 300
el "9B pp512 x3, profile"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 > $OUT/9b-pp-profile.txt 2>&1
head -30 $OUT/9b-pp-profile.txt | cut -c1-130
el "9B 64 streams, profile"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $OUT/9b-64-profile.txt 2>&1
head -40 $OUT/9b-64-profile.txt | cut -c1-200
el "9B 64 streams x2"
for i in 1 2; do
  timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
wait_file 35b-q4km 200
el "35B-A3B pp512 x3, profile"
HOSTLM_CUDA_PROFILE=2 timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 > $OUT/35b-pp-profile.txt 2>&1
head -34 $OUT/35b-pp-profile.txt | cut -c1-130
el "35B-A3B pp512, tg128"
timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen"
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-250
