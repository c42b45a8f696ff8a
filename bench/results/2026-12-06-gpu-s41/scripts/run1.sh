#!/usr/bin/env bash
# Session 41, call 1: main at 71db349 (built here for sm_90, packed by tools/device/pack_build.sh)
# on whatever card comes (the README's goals are the H200's):
#  - 9B Q4_K_M, 64 streams (512-token prompts, 128 tokens each) with engine steps of 2,048
#    (default), 4,096 and 8,192 tokens, and each run's highest GPU memory sample;
#  - k-slice warps again (kslices.sh);
#  - the 27B Q8_0 beside llama.cpp at depth 0 and 65,536 (issue 5's one cell measured only on
#    an H100 since session 36's split merge);
#  - hostlm serve beside llama-server at 32 and 64 streams and the cached 8K prefix.
# llama.cpp (d32676d77) builds in the background from .devcheck (outside the repository).
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
setsid nice -n 15 bash .devcheck/start-llama.sh > /dev/null 2>&1 < /dev/null &
make_file 9b-q4km 9b Q4_K_M
make_file 27b-q8 27b Q8_0
# peak LABEL CMD...: runs CMD while sampling the GPU's memory in use; prints the highest sample.
peak() {
  local label=$1; shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > $W/mem.txt 2>/dev/null &
  local smi=$!
  "$@"
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo "$label: highest GPU memory sample $(sort -n $W/mem.txt | tail -1) MiB"
}
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
wait_file 9b-q4km 240
for b in 2048 4096 8192; do
  el "9B 64 streams, -b $b"
  peak "b$b" bash -c "timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b $b 2>&1 | grep -E '^\\| qwen|rror' | tr -s ' ' | cut -c1-160"
done
source bench/results/2026-12-06-gpu-s41/scripts/kslices.sh
wait_file 27b-q8 300; el "waiting for llama.cpp"; wait_llama
el "27B Q8_0 beside llama.cpp"; compare 27b-q8 65536 $(( $(left 585) - 130 ))
el "serving side by side"
LLAMA_BIN=$L STREAMS=32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 RESULTS=$OUT/serving \
  timeout $(left 585) bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $B > $OUT/serving-log.txt 2>&1
echo "compare rc $?"
cat $OUT/serving/summary.md 2>/dev/null || tail -20 $OUT/serving-log.txt
grep -E "hostlm steps" $OUT/serving-log.txt
el done
} 2>&1 | tee $OUT/run1.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
