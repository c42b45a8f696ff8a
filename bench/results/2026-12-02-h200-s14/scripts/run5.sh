#!/usr/bin/env bash
# Session 14, call 5: serving at 1, 8, 32 and 64 streams on the 9B Q4_K_M shape with the
# faster sampler (commit "Sampler: top-k keeps a heap..."), with the graph timing of
# HOSTLM_CUDA_GRAPH_STATS=1 for the single stream; then the cached-prefix TTFT.
W=/tmp/w14e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
wait_for_model
el "serving"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 1 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | tee $OUT/serving1.txt
timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|engine:" | tee $OUT/serving.txt
el "ttft"
timeout 90 $B/bin/hostlm bench $M --backend cuda --ttft-prefix 8192 --ttft-new 32 2>&1 | tail -4 | tee $OUT/ttft.txt
el done
