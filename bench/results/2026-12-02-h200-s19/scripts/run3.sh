#!/usr/bin/env bash
# Session 19, call 3, on the machine calls 1-2 left warm (llama.cpp built in /tmp/llama17,
# files in /tmp/w19): the same-run comparison at depth 16384 and 65536 on the 9B Q4_K_M
# shape, then the 27B Q4_K_M shape at depth 0 (its GPU memory beside llama.cpp's).
W=/tmp/w19; t0=$(date +%s); R=$PWD; B=$R/build-h200; L=/tmp/llama17
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
( export PYTHONPATH=$W/gguf-py; python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/g27.log 2>&1; echo "g27 rc $?" >> $W/g27.log ) &
el "compare, 9B Q4_K_M at depth 16384 and 65536"
DEPTHS=16384,65536 REPS=2 STEP_TIMEOUT=150 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp9 timeout 400 bash tools/device/run_bench_compare.sh $B $W/9b-q4km.gguf > $OUT/compare9-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp9/summary.md
while ! grep -q "g27 rc" $W/g27.log 2>/dev/null; do sleep 2; done; tail -1 $W/g27.log
el "compare, 27B Q4_K_M at depth 0"
DEPTHS="" REPS=2 STEP_TIMEOUT=120 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp27 timeout 200 bash tools/device/run_bench_compare.sh $B $W/27b-q4km.gguf > $OUT/compare27-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp27/summary.md
rm -rf $OUT/cmp9/raw $OUT/cmp27/raw
el done
