#!/usr/bin/env bash
# Session 38, call 2: MoE prompts take the routes the GPU picked (moe_route, as decode steps
# do) instead of downloading the router's logits and routing on one host thread (about 1 ms a
# layer for 512 tokens, the GPU idle meanwhile):
#  - the CUDA suite;
#  - 35B-A3B Q4_K_M pp512: new default against HOSTLM_CUDA_MOE_ROUTING=0 (every block routed on
#    the host, the old prompt path), alternating, and the profile of the new one;
#  - 35B-A3B Q4_K_M beside llama.cpp (pp512, tg128; llama-bench built here meanwhile).
source bench/results/2026-12-05-h200-s37/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 35b-q4km 35b-a3b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual|CUDA error" $OUT/cuda-tests.txt | head -30
wait_file 35b-q4km 300
for i in 1 2; do
  for routing in 1 0; do
    el "35B-A3B pp512, HOSTLM_CUDA_MOE_ROUTING=$routing"
    HOSTLM_CUDA_MOE_ROUTING=$routing timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512,2048 -n 0 -r 3 2>&1 | grep -E "^\| qwen"
  done
done
el "35B-A3B pp512 x3, profile"
HOSTLM_CUDA_PROFILE=2 timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 > $OUT/35b-pp-profile.txt 2>&1
head -24 $OUT/35b-pp-profile.txt | cut -c1-130
el "waiting for llama.cpp"; wait_llama
el "35B-A3B Q4_K_M beside llama.cpp"; compare 35b-q4km "" $(left 590)
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
