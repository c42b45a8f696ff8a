#!/usr/bin/env bash
# Session 37, call 3 (main + grouped expert products + the tile kernels' attributes for every
# type; llama.cpp built on the machine in the background by .devcheck/start-llama.sh):
#  - the whole CUDA suite (the IQ/TQ/MXFP4 tile products failed in call 1: no shared-memory
#    attribute; matmul_experts is new);
#  - Qwen3.5-35B-A3B shapes in Q4_K_M: the op profile of pp512 with the experts' products many
#    to a launch, then beside llama.cpp (pp512, tg128);
#  - 9B Q4_K_M, 64 streams with 4096-token engine steps (2048 and 8192 were call 2's).
source bench/results/2026-12-05-h200-s37/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 35b-q4km 35b-a3b Q4_K_M
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual|CUDA error" $OUT/cuda-tests.txt | head -40
wait_file 35b-q4km 300
el "35B-A3B Q4_K_M pp512 op profile"
HOSTLM_CUDA_PROFILE=1 timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 0 -r 1 > $OUT/moe-pp-profile.txt 2>&1
head -24 $OUT/moe-pp-profile.txt | grep -E "pp512|matmul|swiglu|wall|gather|weighted"
el "9B Q4_K_M, 64 streams, -b 4096"
for i in 1 2; do
  timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b 4096 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
el "waiting for llama.cpp"; wait_llama
el "35B-A3B Q4_K_M beside llama.cpp"; compare 35b-q4km "" $(left 590)
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
