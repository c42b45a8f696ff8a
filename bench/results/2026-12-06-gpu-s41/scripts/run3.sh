#!/usr/bin/env bash
# Session 41, last call: main with k-slice warps on by default (7af93a4's build): the whole CUDA
# suite with the defaults, then the 9B Q4_K_M at 16 / 32 / 64 streams (default steps, and
# 8,192-token steps at 64) on whichever card comes.
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda suite, defaults"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_file 9b-q4km 120
el "9B 16, 32, 64 streams, defaults"
timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
el "9B 64 streams, -b 8192"
timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b 8192 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
el done
} 2>&1 | tee $OUT/run3.txt | cut -c1-250
