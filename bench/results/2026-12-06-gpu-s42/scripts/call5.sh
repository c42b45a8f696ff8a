#!/usr/bin/env bash
# Session 42, call 5: 16-bit states with their own decode-step kernel (delta_step16.cu: four
# columns of packed state a lane, so that an SM has float32's bytes in flight):
#  - the CUDA tests of the delta rule and the recurrent ops (the new kernel against the CPU and
#    the general kernel);
#  - 9B Q4_K_M at 16 / 32 / 64 streams: f32, f16, bf16, and f16 through the general kernel
#    (HOSTLM_CUDA_DELTA_STEP16=0), two rounds; the 64-stream op profile with f16.
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests of the delta rule"
timeout 120 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Delta*:*Recurrent*:*SixteenBit*:*Conv1d*' > $OUT/cuda-tests.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|tests from .* ran" $OUT/cuda-tests.txt | head -30
wait_file 9b-q4km 200
for i in 1 2; do
  for v in f32 f16 bf16 f16-general; do
    el "9B 16, 32, 64 streams, $v, round $i"
    e=(); st=${v%-general}; [ "$v" = f16-general ] && e=(HOSTLM_CUDA_DELTA_STEP16=0)
    env "${e[@]}" timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 16,32,64 -p 512 -n 128 --state-type $st 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
el "9B 64 streams, op profile, f16"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 --state-type f16 > $OUT/profile-f16.txt 2>&1
grep -iE "delta|total|^\| qwen" $OUT/profile-f16.txt | head -10 | cut -c1-180
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-250
