#!/usr/bin/env bash
# Session 20, call 3: the same-run comparison beside llama.cpp (built on the machine outside the
# repository by .devcheck/start-llama.sh, not committed), on the files call 2 wrote when the
# machine is still held (else written again): depth 0 on four files, then the 9B Q4_K_M at
# 65536.
tar xJf .devlibs/libs.tar.xz -C .devlibs 2>/dev/null
W=/tmp/w20b
if [ -f $W/gguf.log ] && grep -q "gguf rc 0" $W/gguf.log; then
  R=$PWD; B=$R/build-h200
  export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
  export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
  echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
  t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
  M=$W/9b-q4km.gguf; echo "reusing $W"
else
  source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
  ( wait_for_model; export PYTHONPATH=$W/gguf-py
    python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
    python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
    python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
fi
L=/tmp/llama17
# Call 2's build may still be running: start one only where none is (the script's own check
# looks for the log its build writes at the end).
pgrep -f "cmake --build build --target llama-bench" > /dev/null || [ -x $L/llsrc/build/bin/llama-bench ] || bash .devcheck/start-llama.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 300 ] && break; done
el "waiting for llama.cpp"
while pgrep -f "cmake --build build --target llama-bench" > /dev/null || ! grep -q "llama rc" $L/llama-build.log 2>/dev/null; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 360 ] && break; done
tail -2 $L/llama-build.log; ls -la $L/llsrc/build/bin/llama-bench
el "compare, depth 0"
DEPTHS="" REPS=2 STEP_TIMEOUT=100 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp timeout 230 bash tools/device/run_bench_compare.sh $B $W/9b-bf16.gguf $W/9b-q80.gguf $W/9b-q4km.gguf $W/08b-q4km.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp/summary.md
el "compare, 9B Q4_K_M at depth 65536"
DEPTHS=65536 REPS=2 STEP_TIMEOUT=120 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp64 timeout 150 bash tools/device/run_bench_compare.sh $B $W/9b-q4km.gguf > $OUT/compare64-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp64/summary.md
rm -rf $OUT/cmp/raw $OUT/cmp64/raw
el done
