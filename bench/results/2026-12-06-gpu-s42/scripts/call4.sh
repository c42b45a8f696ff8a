#!/usr/bin/env bash
# Session 42, call 4: the delta-rule kernels with the state type fixed at compile time (call 3's
# run-time choice cost the fused decode kernel a 16-byte spill):
#  - the whole CUDA suite (the many-sequence test now keeps its weight arrays alive);
#  - 9B Q4_K_M at 16 / 32 / 64 streams with f32, f16 and bf16 states, two rounds, each run's
#    highest GPU memory sample; single-stream pp512 / tg128 with f32 and f16;
#  - the 64-stream op profile with f32 and with f16 states (where the delta rule's time goes).
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
peak() {
  local label=$1; shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > $W/mem.txt 2>/dev/null &
  local smi=$!
  "$@"
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo "$label: highest GPU memory sample $(sort -n $W/mem.txt | tail -1) MiB"
}
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda suite"
timeout 240 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|tests from .* ran" $OUT/cuda-tests.txt | head -30
wait_file 9b-q4km 200
for i in 1 2; do
  for st in f32 f16 bf16; do
    el "9B 16, 32, 64 streams, --state-type $st, round $i"
    peak "$st" bash -c "timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 16,32,64 -p 512 -n 128 --state-type $st 2>&1 | grep -E '^\\| qwen|rror' | tr -s ' ' | cut -c1-160"
  done
done
for st in f32 f16 f32 f16; do
  el "9B pp512, tg128 --state-type $st"
  timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 128 -r 3 --state-type $st 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
for st in f32 f16; do
  el "9B 64 streams, op profile, --state-type $st"
  HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 --state-type $st > $OUT/profile-$st.txt 2>&1
  grep -iE "delta|conv1d|total|^\| qwen" $OUT/profile-$st.txt | head -12 | cut -c1-180
done
el done
} 2>&1 | tee $OUT/call4.txt | cut -c1-250
