#!/usr/bin/env bash
# Session 37, call 6: the 9B's slow Q6_K 8192x4096 prefill products (call 5: ~0.9 ms each every
# run, against 20-26 us for the Q4_K ones of the same shape) under programmatic launch off
# (HOSTLM_CUDA_PDL=0) and eager module loading, against the default.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
wait_file 9b-q4km 200
for setting in "DEFAULT=1" "HOSTLM_CUDA_PDL=0" "CUDA_MODULE_LOADING=EAGER"; do
  el "9B pp512 x3, $setting"
  env $setting HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 2>&1 | grep -E "pp512|q6_K|q4_K 8192x4096|total"
done
el done
} 2>&1 | tee $OUT/call6.txt | cut -c1-250
