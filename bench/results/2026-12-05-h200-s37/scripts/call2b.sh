#!/usr/bin/env bash
# Session 37, call 2b (right after call 2, same machine, files from call 2): op profiles of the
# 35B-A3B Q4_K_M pp512 and tg64, and of 64 streams of the 9B Q4_K_M with the chunked delta
# rule off (0) and on (64).
source bench/results/2026-12-05-h200-s37/scripts/env.sh > /dev/null 2>&1; cd $R
HOSTLM_CUDA_PROFILE=1 timeout 120 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 0 -r 1 > $OUT/moe-pp-profile.txt 2>&1
for c in 0 64; do
  HOSTLM_CUDA_DELTA_CHUNKED=$c HOSTLM_CUDA_PROFILE=1 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $OUT/streams-profile-$c.txt 2>&1
done
HOSTLM_CUDA_PROFILE=1 timeout 60 $B/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 0 -n 64 -r 1 > $OUT/moe-tg-profile.txt 2>&1
