#!/usr/bin/env bash
# Session 41, call 2 (same build as call 1):
#  - the 35B-A3B Q4_K_M shapes: pp512 / tg128 with every expert on the GPU, with the experts
#    of the first 20 layers on the CPU (--n-cpu-moe 20) and with all of them there (--cpu-moe),
#    the first GPU measurement of session 40's --n-cpu-moe;
#  - the 9B Q4_K_M's 64-stream op profile on this card (HOSTLM_CUDA_PROFILE=2).
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
rm -f $W/27b-q8.gguf  # the disk (64 GB) holds the 35B beside the 9B, not the 27B too
make_file 35b-q4km 35b-a3b Q4_K_M
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader; nproc
wait_file 9b-q4km 240
el "9B 64 streams, op profile"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $OUT/9b-64-profile.txt 2>&1
head -30 $OUT/9b-64-profile.txt | cut -c1-150
wait_file 35b-q4km 300
for moe in "" "--n-cpu-moe 20" "--cpu-moe"; do
  el "35B-A3B pp512, tg128 $moe"
  timeout $(( $(left 580) / 2 )) $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 $moe 2>&1 | grep -E "^\| qwen|rror|CPU|memory" | tr -s ' ' | cut -c1-200
done
source bench/results/2026-12-06-gpu-s41/scripts/tile_anatomy.sh
el done
} 2>&1 | tee $OUT/run2.txt | cut -c1-250
