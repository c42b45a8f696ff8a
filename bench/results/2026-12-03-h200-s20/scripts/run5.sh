#!/usr/bin/env bash
# Session 20, call 5: where a token's time goes outside its replayed step. The graph statistics
# now also time the host's pass over a replayed step (begin_step to end_step). tg128 on the 9B
# Q4_K_M and 0.8B Q4_K_M shapes, two runs each, and the engine bench at 1 and 64 streams.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w20e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "[0-9]* recorded.*missed" $W/$l.err) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err) | $(grep -o "came back in .*" $W/$l.err)"
}
wait_for_model
el "tg128, 9B Q4_K_M"
tg $M 9b-r1; tg $M 9b-r2
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B Q4_K_M"
tg $W/08b-q4km.gguf 08b-r1; tg $W/08b-q4km.gguf 08b-r2
el "engine bench, 1 and 64 streams"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran|came back"
el done
