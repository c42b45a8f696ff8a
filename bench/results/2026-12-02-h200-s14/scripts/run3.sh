#!/usr/bin/env bash
# Session 14, call 3: PDL trigger before the wait (build-h200/lib) against after it
# (build-h200/lib/late, the old order), alternating, with each replay's GPU time
# (HOSTLM_CUDA_GRAPH_STATS=1) beside the interval between replays; then the per-kernel decode
# profile of the 9B Q4_K_M (tools/device/profile_decode.sh, Nsight Compute).
W=/tmp/w14c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; cd $W; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log ) &
export HOSTLM_CUDA_GRAPH_STATS=1
lib() { if [ $1 = late ]; then export HOSTLM_CUDA_LIBRARY=$B/lib/late/libhostlm_cuda.so; else unset HOSTLM_CUDA_LIBRARY; fi; }
tg() {  # file label variant
  lib $3
  timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2-$3.json 2>$OUT/$2-$3.err
  echo "$2 $3 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$2-$3.json 2>&1 | tail -1) | $(grep -o "a replay ran.*" $OUT/$2-$3.err)"
}
wait_for_model
el "9b q4km tg"
for round in 1 2 3; do for v in late first; do tg $M 9b-r$round $v; done; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "0.8b tg"
for round in 1 2; do for v in late first; do tg $W/08b-q4km.gguf 08b-r$round $v; done; done
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done
el "9b q8_0 tg"
for round in 1 2; do for v in late first; do tg $W/9b-q80.gguf q80-r$round $v; done; done
unset HOSTLM_CUDA_LIBRARY HOSTLM_CUDA_GRAPH_STATS
el "decode profile"
NCU=$NCU RESULTS=$OUT/profile timeout 200 bash tools/device/profile_decode.sh $B $M > /dev/null 2>&1; echo "profile rc $?"
head -30 $OUT/profile/summary.txt
el done
