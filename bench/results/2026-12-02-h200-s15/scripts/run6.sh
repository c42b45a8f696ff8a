#!/usr/bin/env bash
# Session 15, call 6 (the committed code: 15 sampling helpers by default on this 16-core
# machine): serving at 1, 8, 32 and 64 streams on the 9B Q4_K_M shape, twice, and the
# cached-prefix TTFT.
W=/tmp/w15f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
wait_for_model
for round in 1 2; do
  el "serving, round $round"
  timeout 150 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|engine:" | tee -a $OUT/serving.txt
done
el "ttft"
timeout 90 $B/bin/hostlm bench $M --backend cuda --ttft-prefix 8192 --ttft-new 32 2>&1 | tail -4 | tee $OUT/ttft.txt
el done
