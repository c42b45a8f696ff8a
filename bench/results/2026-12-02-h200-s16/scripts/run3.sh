#!/usr/bin/env bash
# Session 16, call 3, on the machine call 2 left warm (llama.cpp building in /tmp/llama16,
# files in /tmp/w16b): the same-run comparison beside llama-bench on the 9B Q4_K_M shape,
# pp512 and tg128 at depth 0 and at depth 65536, two repetitions each (hostlm: main at
# 9f633af; the wave-cost plan of call 2 is off by default).
W=/tmp/w16b; t0=$(date +%s); R=$PWD; B=$R/build-h200; L=/tmp/llama16
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
ls -la $W/*.gguf; tail -1 $W/vocab.log
el "waiting for llama.cpp"
while ! grep -q "llama rc" $L/llama-build.log 2>/dev/null; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 420 ] && break; done
tail -1 $L/llama-build.log
el "compare"
DEPTHS=65536 REPS=2 STEP_TIMEOUT=150 LLAMA_BIN=$L/llama/build/bin RESULTS=$OUT/cmp timeout 540 bash tools/device/run_bench_compare.sh $B $W/9b-q4km.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp/summary.md 2>/dev/null | head -40
el done
