#!/usr/bin/env bash
# Session 21, call 2: the delta rule with its norm alone (the attention-gate fusion of call 1
# was slower and is gone). The whole CUDA suite (call 1's new test had reused host-array
# addresses); the engine bench at 8, 32 and 64 streams and tg128 on the 9B and 0.8B Q4_K_M
# shapes, alternating on / HOSTLM_CUDA_DELTA_NORM=0, two rounds.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w21b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "full CUDA suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err) | $(grep -o "host's pass .*" $W/$l.err)"
}
wait_for_model
el "engine bench, 8, 32 and 64 streams, on / off, two rounds"
for round in 1 2; do for cfg in on off; do
  e=""; [ $cfg = off ] && e="HOSTLM_CUDA_DELTA_NORM=0"
  env $e timeout 150 $B/bin/hostlm bench $M --backend cuda --parallel 8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen" | sed "s/^/$cfg-r$round /"
done; done
el "tg128, 9B Q4_K_M"
for round in 1 2; do tg $M 9b-on-r$round; tg $M 9b-off-r$round HOSTLM_CUDA_DELTA_NORM=0; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B Q4_K_M"
for round in 1 2; do tg $W/08b-q4km.gguf 08b-on-r$round; tg $W/08b-q4km.gguf 08b-off-r$round HOSTLM_CUDA_DELTA_NORM=0; done
el done
