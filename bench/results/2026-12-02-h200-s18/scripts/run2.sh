#!/usr/bin/env bash
# Session 18, call 2: call 1's A/B again with the base build able to find its plugin
# (HOSTLM_PLUGIN_PATH; its libhostlm.so sits in .devlibs/base, away from the build's
# manifests); then an Nsight Systems timeline of 9B Q4_K_M decode steps (graph nodes traced)
# summed by tools/device/decode_timeline.py; then the 27B Q4_K_M shape at depth 0 for its GPU
# memory (hostlm alone: llama.cpp's figure, 16,397 MiB, is session 16's).
W=/tmp/w18b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/g27.log 2>&1; echo "g27 rc $?" >> $W/g27.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda/bin/nsys 2>/dev/null | tail -1)
echo "nsys: ${NSYS:-none}"
wait_for_model
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$l.json 2>$OUT/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $OUT/$l.err)"
}
BASE="LD_LIBRARY_PATH=$R/.devlibs/base:$LD_LIBRARY_PATH HOSTLM_PLUGIN_PATH=$B/manifests HOSTLM_CUDA_FUSE_CONV=0"
el "tg128, 9B"
for round in 1 2 3; do
  tg $M 9b-base-r$round $BASE; tg $M 9b-gate-r$round HOSTLM_CUDA_FUSE_CONV=0; tg $M 9b-both-r$round
done
if [ -n "$NSYS" ]; then
  el "nsys timeline, 9B"
  timeout 120 $NSYS profile --cuda-graph-trace=node -t cuda -o $W/tl9 -f true $B/bin/hostlm bench $M --backend cuda -p 0 -n 32 -r 1 > $W/nsys.log 2>&1; echo "nsys rc $?"
  timeout 120 $NSYS export --type sqlite -o $W/tl9.sqlite -f true $W/tl9.nsys-rep > /dev/null 2>&1; echo "export rc $?"
  python3 tools/device/decode_timeline.py $W/tl9.sqlite --steps 8 2>&1 | head -60
fi
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B"
for round in 1 2 3; do
  tg $W/08b-q4km.gguf 08b-base-r$round $BASE; tg $W/08b-q4km.gguf 08b-gate-r$round HOSTLM_CUDA_FUSE_CONV=0; tg $W/08b-q4km.gguf 08b-both-r$round
done
if [ -n "$NSYS" ]; then
  el "nsys timeline, 0.8B"
  timeout 60 $NSYS profile --cuda-graph-trace=node -t cuda -o $W/tl08 -f true $B/bin/hostlm bench $W/08b-q4km.gguf --backend cuda -p 0 -n 32 -r 1 > /dev/null 2>&1; echo "nsys rc $?"
  timeout 60 $NSYS export --type sqlite -o $W/tl08.sqlite -f true $W/tl08.nsys-rep > /dev/null 2>&1
  python3 tools/device/decode_timeline.py $W/tl08.sqlite --steps 8 2>&1 | head -24
fi
while ! grep -q "g27 rc" $W/g27.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 480 ] && break; done
el "27B written"; tail -1 $W/g27.log
DEPTHS="" REPS=2 STEP_TIMEOUT=90 RESULTS=$OUT/cmp27 timeout 100 bash tools/device/run_bench_compare.sh $B $W/27b-q4km.gguf > $OUT/compare27-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp27/summary.md 2>/dev/null | head -20
el done
