#!/usr/bin/env bash
# Session 14, call 4: the bench's logits buffer page-locked (as the engine's is), with each
# replay's GPU time, the interval between replays and the host's share of it
# (HOSTLM_CUDA_GRAPH_STATS=1): tg128 of the 9B Q4_K_M, 0.8B Q4_K_M and 9B Q8_0 shapes, and one
# serving stream through the engine.
W=/tmp/w14d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; cd $W; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log ) &
export HOSTLM_CUDA_GRAPH_STATS=1
tg() {  # file label
  timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2.json 2>$OUT/$2.err
  echo "$2 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$2.json 2>&1 | tail -1) | $(grep -o "a replay ran.*" $OUT/$2.err)"
}
wait_for_model
el "9b q4km tg"
for round in 1 2; do tg $M 9b-r$round; done
el "9b serving, 1 stream"
timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 1 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | tee $OUT/serving1.txt
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "0.8b tg"
for round in 1 2; do tg $W/08b-q4km.gguf 08b-r$round; done
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done
el "9b q8_0 tg"
tg $W/9b-q80.gguf q80-r1
el done
