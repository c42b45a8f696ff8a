#!/usr/bin/env bash
# Session 42, call 1: main at 2237b1f (sm_90, packed by tools/device/pack_build.sh) on whichever
# card comes (issue 5 and 6's goals are the H200's; figures are compared only within a call):
#  - the whole CUDA suite (session 41 added cases that had not run on a GPU);
#  - 9B Q4_K_M at 16 / 32 / 64 streams with the defaults (4,096-token steps from 32 sequences);
#  - the 27B Q8_0 beside llama.cpp at depth 0 and 65,536 (pp512, tg128).
# llama.cpp (d32676d77) builds in the background from .devcheck (outside the repository).
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
setsid nice -n 15 bash .devcheck/start-llama.sh > /dev/null 2>&1 < /dev/null &
make_file 9b-q4km 9b Q4_K_M
make_file 27b-q8 27b Q8_0
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda suite, defaults"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_file 9b-q4km 200
for i in 1 2; do
  el "9B 16, 32, 64 streams, defaults, round $i"
  timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
wait_file 27b-q8 300; el "waiting for llama.cpp"; wait_llama
el "27B Q8_0 beside llama.cpp"; compare 27b-q8 65536 $(( $(left 585) - 5 ))
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
