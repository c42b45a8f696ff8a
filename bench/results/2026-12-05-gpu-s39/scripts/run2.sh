#!/usr/bin/env bash
# Written in session 39 (not yet run): issue 6's goal as the issue measures it, through the
# servers. `hostlm serve` of build-h200 (main once wip/ksplit is merged, with whatever switches
# run1.sh found best exported before calling this) beside llama.cpp's llama-server, built here
# in the background first (.devcheck/start-llama-server.sh, not committed: llama-bench and
# llama-server for sm_90 with no web UI; .devcheck/llama-src.tar.xz has tools/ui's CMake
# files and scripts/ui-assets.cmake for that since session 39). 64 slots each, 32 and 64
# streams of 512-token prompts and 128 tokens, then the cached 8K prefix + 32 new tokens.
# The build runs alone: hostlm is measured after it.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
bash .devcheck/start-llama-server.sh
make_file 9b-q4km 9b Q4_K_M
{
wait_file 9b-q4km 300
el "llama.cpp build"
for i in $(seq 1 200); do grep -q "llama rc" /tmp/llama/build.log 2>/dev/null && break; sleep 2; done
tail -2 /tmp/llama/build.log; ls -la $L/llama-server
el "serving side by side"
LLAMA_BIN=$L STREAMS=32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 RESULTS=$OUT/serving \
  timeout $(left 590) bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $B > $OUT/serving-log.txt 2>&1
echo "compare rc $?"
cat $OUT/serving/summary.md 2>/dev/null || tail -20 $OUT/serving-log.txt
el done
} 2>&1 | tee $OUT/run2.txt | cut -c1-250
