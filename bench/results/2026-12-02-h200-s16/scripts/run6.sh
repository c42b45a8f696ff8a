#!/usr/bin/env bash
# Session 16, call 6, on the machine call 5 left warm (files in /tmp/lc9 and /tmp/w16e;
# llama.cpp's llama-bench built there by call 5's wrapper, LLAMA_BIN): llama.cpp's part of the
# 9B 262,144-token run (run_long_context.sh, step llama), then the 27B Q4_K_M shape beside
# llama-bench at depth 0 (pp512, tg128, two repetitions; same-run GPU memory).
set -u
W=/tmp/w16e; R=$PWD; B=$R/build-h200; t0=$(date +%s)
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
el "waiting for llama.cpp"
while [ ! -x "${LLAMA_BIN:-/nonexistent}/llama-bench" ]; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 300 ] && break; done; sleep 2
el "27B beside llama-bench"
DEPTHS="" REPS=2 STEP_TIMEOUT=120 RESULTS=$OUT/cmp27 timeout 200 bash tools/device/run_bench_compare.sh $B $W/27b-q4km.gguf > $OUT/compare27-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp27/summary.md 2>/dev/null | head -14
el "9B, 262,144-token window, llama.cpp"
SIZE=9b STEPS="llama" WORK=/tmp/lc9 RESULTS=$OUT/lc9 STEP_TIMEOUT=330 timeout 340 bash tools/device/run_long_context.sh $B > $OUT/lc9-log.txt 2>&1
echo "long context rc $?"; cat $OUT/lc9/summary.md 2>/dev/null | head -30 || tail -20 $OUT/lc9-log.txt
el done
