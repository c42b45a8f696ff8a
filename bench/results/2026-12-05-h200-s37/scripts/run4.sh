#!/usr/bin/env bash
# Session 37, call 4: why the 35B-A3B's dense prefill products are slow (call 3: 390 of them per
# pp512 at ~276 us each, 13 TFLOP/s, where the 9B's run at hundreds): op profiles with a row per
# product type and shape (HOSTLM_CUDA_PROFILE=2), the 35B-A3B and the 9B (Q4_K_M), pp512.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 35b-q4km 35b-a3b Q4_K_M
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
wait_file 9b-q4km 200
el "9B pp512, detailed profile"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 1 > $OUT/9b-pp-profile.txt 2>&1
head -40 $OUT/9b-pp-profile.txt
wait_file 35b-q4km 300
el "35B-A3B pp512, detailed profile"
HOSTLM_CUDA_PROFILE=2 timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 0 -r 1 > $OUT/35b-pp-profile.txt 2>&1
head -60 $OUT/35b-pp-profile.txt
el done
} 2>&1 | tee $OUT/call4.txt | cut -c1-250
