#!/usr/bin/env bash
# Session 21, call 3: qk_norm_rope stores the keys and values into the pages (kv_store's launch
# gone; HOSTLM_CUDA_QK_STORE=0: launched apart), and the delta rule takes its norm only for up
# to 8 sequences. The whole CUDA suite; tg128 on the 9B and 0.8B Q4_K_M shapes alternating on /
# store apart; the engine bench at 64 streams, on / delta norm apart.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w21c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "full CUDA suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err) | $(grep -o "host's pass .*" $W/$l.err)" | tee -a $W/tg.txt
}
wait_for_model
el "tg128, 9B Q4_K_M: on / store apart"
for round in 1 2; do tg $M 9b-on-r$round; tg $M 9b-off-r$round HOSTLM_CUDA_QK_STORE=0; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B Q4_K_M: on / store apart"
for round in 1 2; do tg $W/08b-q4km.gguf 08b-on-r$round; tg $W/08b-q4km.gguf 08b-off-r$round HOSTLM_CUDA_QK_STORE=0; done
el "engine bench, 64 streams: on / delta norm apart"
for cfg in on off; do
  e=""; [ $cfg = off ] && e="HOSTLM_CUDA_DELTA_NORM=0"
  env $e timeout 100 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen" | sed "s/^/$cfg /"
done
el done
