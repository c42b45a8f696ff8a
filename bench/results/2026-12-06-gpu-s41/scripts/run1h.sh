#!/usr/bin/env bash
# Session 41, call 1 on an H100 (the H200 could not be started): the parts of run1.sh and
# run2.sh that an H100 adds to (its 27B Q8_0 and serving comparisons were made in sessions 37
# and 40):
#  - 9B Q4_K_M, 64 streams with engine steps of 2,048 / 4,096 / 8,192 tokens, two rounds, with
#    each run's highest GPU memory sample;
#  - the 35B-A3B Q4_K_M shapes: pp512 / tg128 with every expert on the GPU, --n-cpu-moe 20 and
#    --cpu-moe (session 40's flags, first measured on a GPU here);
#  - k-slice warps again (kslices.sh);
#  - the 9B's 64-stream op profile.
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
make_file 35b-q4km 35b-a3b Q4_K_M
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
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader; nproc
wait_file 9b-q4km 240
for i in 1 2; do
  for b in 2048 4096 8192; do
    el "9B 64 streams, -b $b, round $i"
    peak "b$b" bash -c "timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b $b 2>&1 | grep -E '^\| qwen|rror' | tr -s ' ' | cut -c1-160"
  done
done
source bench/results/2026-12-06-gpu-s41/scripts/kslices.sh
wait_file 35b-q4km 300
for moe in "" "--n-cpu-moe 20" "--cpu-moe"; do
  el "35B-A3B pp512, tg128 $moe"
  timeout 100 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 $moe 2>&1 | grep -E "^\| qwen|rror|CPU" | tr -s ' ' | cut -c1-200
done
el "9B 64 streams, op profile"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $OUT/9b-64-profile.txt 2>&1
head -30 $OUT/9b-64-profile.txt | cut -c1-150
source bench/results/2026-12-06-gpu-s41/scripts/tile_anatomy.sh
el done
} 2>&1 | tee $OUT/run1h.txt | cut -c1-250
