#!/usr/bin/env bash
# Session 15, call 5: the engine's sampling helpers (HOSTLM_SAMPLER_THREADS; 7 by default on
# this 16-core machine) at 64 and 32 streams: 7 against 15, in turn, twice, with the graph
# timing (the host's part between a step's download and the next replay).
W=/tmp/w15e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
wait_for_model
export HOSTLM_CUDA_GRAPH_STATS=1
for round in 1 2; do
  for n in 64 32; do
    for t in 7 15; do
      echo "streams $n, $t sampling threads, round $round"
      HOSTLM_SAMPLER_THREADS=$t timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel $n -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | sed -E 's/hostlm cuda graphs: .* a replay ran/a replay ran/' | tee -a $OUT/serving.txt
    done
  done
done
el done
