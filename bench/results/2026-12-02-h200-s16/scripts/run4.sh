#!/usr/bin/env bash
# Session 16, call 4, on the machine calls 2-3 left warm: serving side by side with llama.cpp's
# llama-server, built in calls 2-3 (so nothing builds beside hostlm this time). The 9B Q4_K_M
# shape with the real Qwen3.5 vocabulary (written in call 2); both servers 64 slots; 1, 8, 32
# and 64 streams of 512-token prompts and 128 tokens each, then three times an 8,192-token
# prompt and the same prompt plus 32 new tokens (tools/device/run_serving_compare.sh).
W=/tmp/w16b; t0=$(date +%s); R=$PWD; B=$R/build-h200; L=/tmp/llama16
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
ls $L/llama/build/bin/llama-server && uptime
el "serving side by side"
LLAMA_BIN=$L/llama/build/bin STREAMS=1,8,32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 RESULTS=$OUT/serving \
  timeout 560 bash tools/device/run_serving_compare.sh $W/9b-q4km-vocab.gguf $B > $OUT/serving-log.txt 2>&1
echo "compare rc $?"
cat $OUT/serving/summary.md 2>/dev/null || { cat $OUT/serving/*.md; tail -20 $OUT/serving-log.txt; }
el done
