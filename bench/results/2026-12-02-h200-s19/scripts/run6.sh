#!/usr/bin/env bash
# Session 19, call 6: the same-run comparison beside llama.cpp again, with this session's
# changes (main at the commit printed below). Starts llama.cpp's build outside the repository
# (.devcheck/start-llama.sh, not committed) and the files in the background; meanwhile the
# engine bench at 1/8/32/64 streams; then depth 0 on four files and the 9B Q4_K_M at 65536.
W=/tmp/w19f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
bash .devcheck/start-llama.sh; L=/tmp/llama17
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
wait_for_model
el "engine bench, 1/8/32/64 streams"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 150 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran"
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 300 ] && break; done
ls -la $W/*.gguf
el "waiting for llama.cpp"
while ! grep -q "llama rc" $L/llama-build.log 2>/dev/null; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 360 ] && break; done
tail -1 $L/llama-build.log; tail -1 $L/build.log | cut -c1-120
el "compare, depth 0"
DEPTHS="" REPS=2 STEP_TIMEOUT=100 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp timeout 200 bash tools/device/run_bench_compare.sh $B $W/9b-bf16.gguf $W/9b-q80.gguf $W/9b-q4km.gguf $W/08b-q4km.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp/summary.md
el "compare, 9B Q4_K_M at depth 65536"
DEPTHS=65536 REPS=2 STEP_TIMEOUT=120 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp64 timeout 150 bash tools/device/run_bench_compare.sh $B $W/9b-q4km.gguf > $OUT/compare64-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp64/summary.md
rm -rf $OUT/cmp/raw $OUT/cmp64/raw
el done
