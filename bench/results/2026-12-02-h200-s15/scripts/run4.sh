#!/usr/bin/env bash
# Session 15, call 4 (session 14's code, main at d550bc0): where a 64-stream serving step's
# time goes. Serving at 32 and 64 streams with the graph timing (GPU time per replayed decode
# step beside the interval between steps), then the CUDA op profile (graphs off) of 64
# streams with short prompts, so that decode steps dominate it.
W=/tmp/w15d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
wait_for_model
for n in 64 32; do
  el "serving $n streams, graph timing"
  HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel $n -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | tee $OUT/serving$n.txt
done
el "op profile, 64 streams, 32-token prompts"
HOSTLM_CUDA_PROFILE=1 timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 32 -n 128 > $OUT/profile64.txt 2>&1
grep -E "^\| qwen" $OUT/profile64.txt; sed -n '/CUDA op profile/,$p' $OUT/profile64.txt | head -40
el done
