#!/usr/bin/env bash
# Session 14, call 2: PDL trigger before the wait (every kernel lets the next one be
# scheduled as soon as it starts) against after it (build-h200/lib-late, the code before).
# The CUDA suite with the new order, then tg128 and serving alternating the two libraries.
W=/tmp/w14b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; cd $W; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log ) &
el "full suite (trigger first)"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
lib() { if [ $1 = late ]; then export HOSTLM_CUDA_LIBRARY=$B/lib-late/libhostlm_cuda.so; else unset HOSTLM_CUDA_LIBRARY; fi; }
tg() {  # file label variant
  lib $3
  timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2-$3.json 2>$OUT/$2-$3.err
  echo "$2 $3 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$2-$3.json 2>&1 | tail -1)"
}
el "9b q4km tg"
for round in 1 2 3; do for v in late first; do tg $M 9b-r$round $v; done; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "0.8b tg"
for round in 1 2; do for v in late first; do tg $W/08b-q4km.gguf 08b-r$round $v; done; done
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done
el "9b q8_0 tg"
for round in 1 2; do for v in late first; do tg $W/9b-q80.gguf q80-r$round $v; done; done
el "serving"
for v in late first; do lib $v
  timeout 100 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen" | sed "s/^/$v /" | tee $OUT/serving-$v.txt
done
unset HOSTLM_CUDA_LIBRARY
el done
