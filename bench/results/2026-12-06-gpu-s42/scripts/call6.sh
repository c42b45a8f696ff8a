#!/usr/bin/env bash
# Session 42, call 6 (the H200 of call 5, warm): hostlm serve beside llama-server on the 9B
# Q4_K_M at 32 and 64 streams and the cached 8K prefix, default settings (f32 states), then
# hostlm serve alone with HOSTLM_STATE_TYPE=f16.
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
setsid nice -n 15 bash .devcheck/start-llama.sh > /dev/null 2>&1 < /dev/null &
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
wait_file 9b-q4km 200; el "waiting for llama.cpp"; wait_llama
el "serving side by side"
LLAMA_BIN=$L STREAMS=32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 RESULTS=$OUT/serving \
  timeout $(left 330) bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $B > $OUT/serving-log.txt 2>&1
echo "compare rc $?"
cat $OUT/serving/summary.md 2>/dev/null || tail -20 $OUT/serving-log.txt
grep -E "hostlm steps" $OUT/serving-log.txt
el "hostlm serve alone, f16 states"
HOSTLM_STATE_TYPE=f16 STREAMS=32,64 VOCAB=240000 RESULTS=$OUT/serving-f16 \
  timeout $(left 400) bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $B > $OUT/serving-f16-log.txt 2>&1
echo "f16 rc $?"
cat $OUT/serving-f16/summary.md 2>/dev/null || tail -20 $OUT/serving-f16-log.txt
el done
} 2>&1 | tee $OUT/call6.txt | cut -c1-250
