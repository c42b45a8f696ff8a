#!/usr/bin/env bash
# Session 42, call 7 (the H200 of calls 5 and 6, warm, llama.cpp built there by call 6): call 6's
# side-by-side had run out of time before llama-server; this is it again at 32 and 64 streams
# without the cached-prefix part. Run as one command line:
source bench/results/2026-12-06-gpu-s41/scripts/env.sh > /dev/null 2>&1; ls $L/llama-server && LLAMA_BIN=$L STREAMS=32,64 VOCAB=240000 RESULTS=$OUT/serving timeout 105 bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $B > $OUT/serving-log.txt 2>&1; echo "rc $?"; cat $OUT/serving/summary.md 2>/dev/null || (cat $OUT/serving/*.md; tail -5 $OUT/serving-log.txt)
