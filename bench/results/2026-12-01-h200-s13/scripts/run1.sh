#!/usr/bin/env bash
# Session 13, call 1 (code of 49a8e92): where a 32- and 64-stream serving step goes (issue 6).
# Serving with 512 (default), 1024 and 2048 tokens per step; the op profile of a 64-stream run
# with short prompts (decode-dominated); Nsight Compute over ~2 steps of 64-stream decode.
W=/tmp/w13a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
wait_for_model
for b in 512 1024 2048; do
  el "serving -b $b"
  timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel 32,64 -p 512 -n 128 -b $b 2>&1 | grep -E "^\| qwen" | tee $OUT/serving-b$b.txt
done
el "op profile, 64 streams, 16-token prompts"
HOSTLM_CUDA_PROFILE=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 16 -n 128 > $OUT/profile-64-p16.txt 2>&1
grep -A30 "CUDA op profile" $OUT/profile-64-p16.txt | head -32
el "op profile, 64 streams, 512-token prompts"
HOSTLM_CUDA_PROFILE=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 > $OUT/profile-64-p512.txt 2>&1
grep -A30 "CUDA op profile" $OUT/profile-64-p512.txt | head -32
el "ncu 64-stream decode"
PARALLEL=64 SKIP=30000 COUNT=500 NGEN=128 RESULTS=$OUT/ncu64 timeout 200 bash tools/device/profile_decode.sh $B $M > /dev/null 2>&1; echo "ncu rc $?"
head -40 $OUT/ncu64/summary.txt
el done
