#!/usr/bin/env bash
# Session 14, call 1: L2 prefetch handed from each single-token product to the next. The
# CUDA suite, then tg128 alternating HOSTLM_CUDA_L2_PREFETCH_MB (0 = off; unset = half the
# L2) on the 9B Q4_K_M, 0.8B Q4_K_M and 9B Q8_0 shapes.
W=/tmp/w14a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; cd $W; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log ) &
el "full suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
tg() {  # file label mb
  local mb=$3
  if [ "$mb" = default ]; then unset HOSTLM_CUDA_L2_PREFETCH_MB; else export HOSTLM_CUDA_L2_PREFETCH_MB=$mb; fi
  timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2-mb$mb.json 2>$OUT/$2-mb$mb.err
  echo "$2 mb=$mb $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r.get('test','?'), r.get('avg_ts', r.get('t/s', 0))) for r in (d if isinstance(d, list) else d.get('results', [d]))))" $OUT/$2-mb$mb.json 2>&1 | tail -1)"
  unset HOSTLM_CUDA_L2_PREFETCH_MB
}
el "9b q4km"
for round in 1 2; do for mb in 0 default 12 40; do tg $M 9b-q4km-r$round $mb; done; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "0.8b"
for round in 1 2; do for mb in 0 default; do tg $W/08b-q4km.gguf 08b-r$round $mb; done; done
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done; tail -1 $W/gq8.log
el "9b q8_0"
for round in 1 2; do for mb in 0 default; do tg $W/9b-q80.gguf 9b-q80-r$round $mb; done; done
el done
