#!/usr/bin/env bash
# Session 42, call 3: main with 16-bit recurrent states (--state-type f16|bf16), built for sm_90
# and packed by tools/device/pack_build.sh:
#  - the CUDA tests of the delta rule (16-bit states against the CPU) and the whole suite;
#  - 9B Q4_K_M at 16 / 32 / 64 streams with f32, f16 and bf16 states, two rounds, each run's
#    highest GPU memory sample; single-stream tg128 with each (the state is 1/40 of a step's
#    bytes there, so no change is expected).
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
for st in f32 f16 bf16; do
  el "9B tg128 --state-type $st"
  timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 128 -r 3 --state-type $st 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-250
