#!/usr/bin/env bash
# Session 42, call 2 (the warm machine of call 1: its files and llama.cpp build are reused):
# hostlm serve beside llama-server on the 9B Q4_K_M at 32 and 64 streams and the cached 8K
# prefix (issue 6, with session 41's defaults), then the 35B-A3B Q4_K_M with every expert on
# the GPU, --n-cpu-moe 20 and --cpu-moe (never measured on a GPU).
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
setsid nice -n 15 bash .devcheck/start-llama.sh > /dev/null 2>&1 < /dev/null &
make_file 9b-q4km 9b Q4_K_M
rm -f $W/27b-q8.gguf  # the disk holds 64 GB
make_file 35b-q4km 35b-a3b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
wait_file 9b-q4km 200; el "waiting for llama.cpp"; wait_llama
el "serving side by side"
LLAMA_BIN=$L STREAMS=32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 RESULTS=$OUT/serving \
  timeout $(left 400) bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $B > $OUT/serving-log.txt 2>&1
echo "compare rc $?"
cat $OUT/serving/summary.md 2>/dev/null || tail -20 $OUT/serving-log.txt
grep -E "hostlm steps" $OUT/serving-log.txt
wait_file 35b-q4km 100
for moe in "" "--n-cpu-moe 20" "--cpu-moe"; do
  el "35B-A3B pp512, tg128 $moe"
  timeout $(( $(left 585) / 2 )) $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 $moe 2>&1 | grep -E "^\| qwen|rror|CPU" | tr -s ' ' | cut -c1-200
done
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
