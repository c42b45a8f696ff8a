#!/usr/bin/env bash
# Session 21, call 5: rows per warp of the one-token GEMV on the 9B Q8_0 shape (its tg128 was
# 398.2 in call 4, goal 400): HOSTLM_CUDA_GEMV_ROWS unset (the occupancy rule) against fixed
# values, two rounds, with the replayed step's GPU time.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w21e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( export PYTHONPATH=$W/gguf-py; sleep 3
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err)"
}
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done; tail -1 $W/gq8.log
el "tg128, 9B Q8_0, rows per warp"
for round in 1 2; do
  tg $W/9b-q80.gguf q8-auto-r$round
  for r in 2 3 4 6 8; do tg $W/9b-q80.gguf q8-rows$r-r$round HOSTLM_CUDA_GEMV_ROWS=$r; done
done
el done
