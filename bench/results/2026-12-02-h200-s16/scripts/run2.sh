#!/usr/bin/env bash
# Session 16, call 2 (main plus the multi-wave tile plan, HOSTLM_CUDA_TILE_WAVE_COST): GPU
# time per replayed decode step at 16, 32 and 64 streams on the 9B Q4_K_M shape, one process
# per stream count, alternating the wave cost (-1: one wave only, as before; 0.5; 1.5), two
# rounds. llama.cpp builds beside it (outside the repository, for calls 3-4), so only the GPU
# times compare; the 9B Q4_K_M file with the real Qwen3.5 vocabulary is written for call 4.
W=/tmp/w16b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
gunzip -c .devcheck/qwen35-tokenizer.json.gz > $W/tokenizer.json
( export PYTHONPATH=$W/gguf-py; sleep 5; python3 tools/make_shape_gguf.py 9b $W/9b-q4km-vocab.gguf --type Q4_K_M --tokenizer $W/tokenizer.json > $W/vocab.log 2>&1; echo "vocab rc $?" >> $W/vocab.log ) &
wait_for_model
for round in 1 2; do
  for n in 16 32 64; do
    for wc in -1 0.5 1.5; do
      r=$(HOSTLM_CUDA_TILE_WAVE_COST=$wc HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel $n -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | tr '\n' ' ')
      echo "round $round streams $n wave $wc: $(echo "$r" | awk -F'|' '{print $9}') t/s; $(echo "$r" | grep -oE 'a replay ran [0-9.]+ us on the GPU')" | tee -a $OUT/waves.txt
    done
  done
done
el "tests with wave cost 0.5"
HOSTLM_CUDA_TILE_WAVE_COST=0.5 timeout 120 $B/bin/test_cuda_backend --gtest_filter='*CudaQuant*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED  \]" | head
el done
