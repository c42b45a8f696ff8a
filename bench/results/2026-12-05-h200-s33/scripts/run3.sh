#!/usr/bin/env bash
# Session 33, call 3: branch wip/conv1d-fixed-taps (its conv1d.cu on main 8706b65, built here
# for sm_90 into .devcheck/conv1d/libhostlm_cuda.so.xz) against main's library, and the engine's
# step size at 64 streams:
#  - the conv1d and recurrent-op tests on the branch's library;
#  - 64 streams of 512-token prompts, main / branch alternating; the prefill's op profile of each;
#  - 64 streams with -b 8192 against the default 2048-token steps, alternating.
source bench/results/2026-12-05-h200-s33/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
xz -dkf .devcheck/conv1d/libhostlm_cuda.so.xz
ALT=$R/.devcheck/conv1d/libhostlm_cuda.so
{
el "conv1d tests on the branch's library"
HOSTLM_CUDA_LIBRARY=$ALT timeout 120 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Conv*:*RecurrentOps*:TinyModels/CudaQwen35.*' > $OUT/tests-conv1d.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/tests-conv1d.txt | head -20
wait_file 9b-q4km 150
streams() {  # LABEL ENV... -- ARGS...
  local label=$1; shift
  echo "-- $label"; env "$@" timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
}
el "64 streams: main / conv1d branch"
for i in 1 2; do
  streams main HOSTLM_CUDA_LIBRARY=$B/lib/libhostlm_cuda.so
  streams conv1d HOSTLM_CUDA_LIBRARY=$ALT
done
el "prefill profiles"
for lib in $B/lib/libhostlm_cuda.so $ALT; do
  HOSTLM_CUDA_LIBRARY=$lib HOSTLM_CUDA_PROFILE=1 timeout 80 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 1 > $OUT/profile-$(basename $(dirname $lib)).txt 2>&1
  grep -E "conv1d|wall|^total" $OUT/profile-$(basename $(dirname $lib)).txt | head -5
done
el "64 streams: -b 2048 / 8192"
for i in 1 2; do
  echo "-- b2048"; timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b 2048 2>&1 | grep -E "^\| qwen"
  echo "-- b8192"; timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b 8192 2>&1 | grep -E "^\| qwen|rror"
done
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-250
