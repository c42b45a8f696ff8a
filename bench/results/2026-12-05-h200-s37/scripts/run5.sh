#!/usr/bin/env bash
# Session 37, call 5: are call 4's slow products (the F32 router 256x2048 at ~1 ms, Q6_K
# 8192-row products at ~2 ms) slow every run or once (first launches)? The same detailed
# profiles with three measured runs instead of one.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 35b-q4km 35b-a3b Q4_K_M
make_file 9b-q4km 9b Q4_K_M
{
wait_file 9b-q4km 200
el "9B pp512 x3, detailed profile"
HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 > $OUT/9b-pp-profile-r3.txt 2>&1
head -16 $OUT/9b-pp-profile-r3.txt
wait_file 35b-q4km 300
el "35B-A3B pp512 x3, detailed profile"
HOSTLM_CUDA_PROFILE=2 timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 > $OUT/35b-pp-profile-r3.txt 2>&1
head -20 $OUT/35b-pp-profile-r3.txt
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-250
