#!/usr/bin/env bash
# Session 20, call 2: decode steps kept as up to eight recorded graphs, replayed by their ops
# (HOSTLM_CUDA_GRAPHS_KEPT=1 keeps one, as before), with call 1's norm kernel and download
# statistics. The whole CUDA suite; tg128 on the 9B Q4_K_M and 0.8B Q4_K_M shapes, rounds
# alternating kept=8 (the default) and kept=1, with the graph statistics; the engine bench at
# 1/8/32/64 streams. Starts llama.cpp's build outside the repository (.devcheck/start-llama.sh,
# not committed) and the other files in the background for call 3 (run3.sh), which reuses
# them if the machine is still held.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w20b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
bash .devcheck/start-llama.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "full CUDA suite"
timeout 230 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "[0-9]* recorded.*missed" $W/$l.err) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err) | $(grep -o "came back in .*" $W/$l.err)"
}
wait_for_model
el "tg128, 9B Q4_K_M: kept 8 / kept 1"
for round in 1 2 3; do
  tg $M 9b-kept8-r$round
  tg $M 9b-kept1-r$round HOSTLM_CUDA_GRAPHS_KEPT=1
done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B Q4_K_M: kept 8 / kept 1"
for round in 1 2 3; do
  tg $W/08b-q4km.gguf 08b-kept8-r$round
  tg $W/08b-q4km.gguf 08b-kept1-r$round HOSTLM_CUDA_GRAPHS_KEPT=1
done
el "engine bench, 1/8/32/64 streams"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 150 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran|came back"
el "files: $(ls $W/*.gguf | xargs -n1 basename | tr '\n' ' ') llama: $(tail -1 /tmp/llama17/llama-build.log 2>/dev/null)"
