#!/usr/bin/env bash
# Session 13, call 2: the CUDA suite (with the new 16-bit prefill tests); serving at the new
# default of 2048 tokens per step and at 4096; the 9B BF16 shape with the one-token 16-bit
# kernel at depths 0 (the old kernel), 4 and 8, and prefill with the exact mode.
W=/tmp/w13b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( while [ ! -d $W/gguf-py ]; do sleep 1; done; sleep 2; PYTHONPATH=$W/gguf-py python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "bf16 rc $?" >> $W/gb.log ) &
el "full suite"
timeout 280 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|default vs exact" $OUT/cuda-tests.txt | head -30
wait_for_model
for b in 0 4096; do
  el "serving -b $b"
  bopt=""; [ $b -gt 0 ] && bopt="-b $b"
  timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel 1,32,64 -p 512 -n 128 $bopt 2>&1 | grep -E "^\| qwen|engine:" | tee $OUT/serving-b$b.txt
done
while ! grep -q "bf16 rc" $W/gb.log 2>/dev/null; do sleep 2; done; el "bf16 written"; tail -1 $W/gb.log
rm -f $M
F=$W/9b-bf16.gguf
for d in 0 4 8 4 0 8; do
  HOSTLM_CUDA_GEMV16_DEPTH=$d timeout 90 $B/bin/hostlm bench $F --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/bf16-d$d.json 2>/dev/null
  python3 -c "import json,sys; print('depth', sys.argv[2], [(r['n_prompt'], r['n_gen'], round(r['avg_ts'],1), r['device_memory_used_peak']//2**20) for r in json.load(open(sys.argv[1]))])" $OUT/bf16-d$d.json $d
done
el "bf16 exact prefill"
HOSTLM_CUDA_EXACT_16BIT=1 timeout 90 $B/bin/hostlm bench $F --backend cuda -p 512 -n 16 -r 2 -o json > $OUT/bf16-exact.json 2>/dev/null
python3 -c "import json,sys; print('exact', [(r['n_prompt'], r['n_gen'], round(r['avg_ts'],1)) for r in json.load(open(sys.argv[1]))])" $OUT/bf16-exact.json
el done
