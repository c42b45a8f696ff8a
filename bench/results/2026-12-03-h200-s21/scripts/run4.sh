#!/usr/bin/env bash
# Session 21, call 4: the same-run comparison beside llama.cpp (built on the machine outside the
# repository by .devcheck/start-llama.sh, not committed) with every change of the session
# (the delta rule with its norm, the keys stored by qk_norm_rope): four files at depth 0, then
# the 9B Q4_K_M at depth 65536.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w21d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
L=/tmp/llama17; bash .devcheck/start-llama.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
( export PYTHONPATH=$W/gguf-py; sleep 5
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "waiting for the files and llama.cpp"
while ! grep -q "gb rc" $W/gb.log 2>/dev/null || ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 360 ] && break; done
tail -1 $W/gguf.log; tail -1 $W/g08.log; tail -1 $W/gq8.log; tail -1 $W/gb.log
while ! grep -q "llama rc" $L/llama-build.log 2>/dev/null; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 420 ] && break; done
tail -2 $L/llama-build.log; ls -la $L/llsrc/build/bin/llama-bench
el "compare, depth 0"
DEPTHS="" REPS=2 STEP_TIMEOUT=60 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp timeout 170 bash tools/device/run_bench_compare.sh $B $W/9b-q4km.gguf $W/08b-q4km.gguf $W/9b-q80.gguf $W/9b-bf16.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp/summary.md
el "compare, 9B Q4_K_M at depth 65536"
DEPTHS=65536 REPS=2 STEP_TIMEOUT=60 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp64 timeout 100 bash tools/device/run_bench_compare.sh $B $W/9b-q4km.gguf > $OUT/compare64-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp64/summary.md
rm -rf $OUT/cmp/raw $OUT/cmp64/raw
el done
