#!/usr/bin/env bash
# Session 25, call 3 (right after call 2, same machine): beside llama.cpp (built outside the
# repository in call 2), the build of call 1: four files at depth 0; then the 9B Q4_K_M's
# 262,144-token window, hostlm and llama-bench, GPU memory sampled every 20 ms.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w25; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
L=/tmp/llama17
{
for i in $(seq 1 150); do grep -q "llama rc" $L/llama-build.log 2>/dev/null && grep -q "g08 rc" $W/g08.log 2>/dev/null && break; sleep 2; done
tail -1 $L/llama-build.log; tail -1 $W/g08.log; ls $W
el "compare, depth 0"
DEPTHS="" REPS=2 STEP_TIMEOUT=60 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp timeout 220 bash tools/device/run_bench_compare.sh $B $W/9b-q4km.gguf $W/08b-q4km.gguf $W/9b-q80.gguf $W/9b-bf16.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp/summary.md
rm -rf $OUT/cmp/raw
el "262,144-token window"
mkdir -p /tmp/lc && ln -sf $W/9b-q4km.gguf /tmp/lc/9b-q4_k_m.gguf
PYTHONPATH=$W/gguf-py SIZE=9b WORK=/tmp/lc STEPS="hostlm llama" POLL_MS=20 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/lc9 timeout 260 tools/device/run_long_context.sh build-h200 2>&1 | grep -E "peak|prefill|t/s|FAILED|pp|tg" | head -16
cd $OUT && rm -rf lc9/raw/*.gguf; grep -E "^\| (hostlm|llama)" lc9/summary.md; for f in lc9/raw/*.vram; do echo "$f max $(sort -n $f | tail -1)"; done; tar czf lc9.tgz lc9 && rm -rf lc9
el done
} 2>&1 | tee $OUT/call3.txt
