#!/usr/bin/env bash
# Session 37, call 6 (not run: the session's device time was spent; meant as the next session's
# first call, with bench_cuda_quant added to the carried archive): the slow Q6_K 8192-row and
# F32 prefill products of calls 4-5 (~0.9 ms each every run, against 20-26 us for Q4_K ones of
# the same shape), first alone (bench_cuda_quant, T = 512, with and without the weight arena),
# then in the 9B pp512 profile under programmatic launch off, eager module loading and the
# arena off.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
el "products alone, T = 512"
for arena in 1 0; do
  echo "-- HOSTLM_CUDA_WEIGHT_ARENA=$arena"
  HOSTLM_CUDA_WEIGHT_ARENA=$arena HOSTLM_BENCH_SHAPES=8192x4096,8192x2048,4096x12288,256x2048,1x2048 \
    HOSTLM_BENCH_TOKENS=512 timeout 120 $B/bin/bench_cuda_quant q6_K q4_K f32 2>&1 | tail -20
done
wait_file 9b-q4km 200
for setting in "DEFAULT=1" "HOSTLM_CUDA_PDL=0" "CUDA_MODULE_LOADING=EAGER" "HOSTLM_CUDA_WEIGHT_ARENA=0"; do
  el "9B pp512 x3, $setting"
  env $setting HOSTLM_CUDA_PROFILE=2 timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 2>&1 | grep -E "pp512|q6_K|q4_K 8192x4096|total"
done
el done
} 2>&1 | tee $OUT/call6.txt | cut -c1-250
