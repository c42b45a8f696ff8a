#!/usr/bin/env bash
# Session 13, call 3: the CUDA suite; serving with the tile product's split rule by waves
# (default) and the old one-wave rule (HOSTLM_CUDA_TILE_WAVES=0), alternating; pp512 and
# pp2048 (prefill now expands each tile once per step); the cached-prefix TTFT.
W=/tmp/w13c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "full suite"
timeout 280 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|default vs exact" $OUT/cuda-tests.txt | head -30
wait_for_model
for waves in 1 0 1 0; do
  el "serving waves=$waves"
  HOSTLM_CUDA_TILE_WAVES=$waves timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen" | tee -a $OUT/serving-waves$waves.txt
done
el "pp"
timeout 90 $B/bin/hostlm bench $M --backend cuda -p 512,2048 -n 128 -r 2 -o json > $OUT/pp.json 2>/dev/null
python3 -c "import json,sys; [print(r['n_prompt'], r['n_gen'], round(r['avg_ts'],1), r['device_memory_used_peak']//2**20, 'MiB') for r in json.load(open(sys.argv[1]))]" $OUT/pp.json
el "ttft"
timeout 90 $B/bin/hostlm bench $M --backend cuda --ttft-prefix 8192 --ttft-new 32 2>&1 | tail -4 | tee $OUT/ttft.txt
el done
