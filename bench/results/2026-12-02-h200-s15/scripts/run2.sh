#!/usr/bin/env bash
# Session 15, call 2, on the machine call 1 left warm (its files in /tmp/w15a): the same-run
# comparison beside llama.cpp (built on the machine outside the repository, started during
# call 1; LLAMA_BIN points at its bin folder): 9B BF16, Q8_0 and Q4_K_M and 0.8B Q4_K_M
# shapes, pp512 and tg128, two repetitions each.
W=/tmp/w15a; t0=$(date +%s); R=$PWD; B=$R/build-h200
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
ls -la $W/*.gguf; tail -2 $W/gb.log
while ! grep -q "bf16 rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 240 ] && break; done
el "files written"; tail -1 $W/gb.log
el "waiting for llama.cpp"
while [ ! -x "${LLAMA_BIN:-/nonexistent}/llama-bench" ]; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 300 ] && break; done; sleep 2
el "compare"
DEPTHS="" REPS=2 STEP_TIMEOUT=100 RESULTS=$OUT/cmp timeout 480 bash tools/device/run_bench_compare.sh $B $W/9b-bf16.gguf $W/9b-q80.gguf $W/9b-q4km.gguf $W/08b-q4km.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp/summary.md 2>/dev/null | head -40
el done
