#!/usr/bin/env bash
# Session 37 (same as session 36), call 2 (llama.cpp built on the machine in the background by
# .devcheck/start-llama.sh, not committed):
#  - Qwen3.5-35B-A3B shapes in Q4_K_M: hostlm on the GPU (first run of MoE on CUDA) beside
#    llama.cpp, pp512 and tg128; tg128 with the experts routed on the host (step by step)
#    against on the device (recorded steps);
#  - issue 6: 64 streams of the 9B Q4_K_M with 8192-token engine steps against the default
#    2048, and with the chunked delta rule off / on (pp512 too).
source bench/results/2026-12-05-h200-s37/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 35b-q4km 35b-a3b Q4_K_M
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
wait_file 9b-q4km 200
streams() {  # LABEL EXTRA_BENCH_ARGS [ENV...]: 64 streams of 512-token prompts, 128 tokens each
  local label=$1 extra=$2; shift 2
  echo -n "$label: "
  # shellcheck disable=SC2086
  env "$@" timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 $extra 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
}
el "9B Q4_K_M, 64 streams: -b 2048 / 8192, chunked delta rule off / on"
for i in 1 2; do
  streams "b2048" ""
  streams "b8192" "-b 8192"
  streams "chunked 64" "" HOSTLM_CUDA_DELTA_CHUNKED=64
done
el "pp512 chunked off / on"
for s in 0 64 0 64; do
  echo -n "chunked $s: "
  HOSTLM_CUDA_DELTA_CHUNKED=$s timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 -o json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print(r['test'], round(r['avg_ts'],1), [round(x) for x in r['samples_ts']])"
done
wait_file 35b-q4km 400; el "waiting for llama.cpp"; wait_llama
el "35B-A3B Q4_K_M tg128: routed on the host / on the device"
for r in 0 1; do tg 35b-q4km 0 "routing $r" HOSTLM_CUDA_MOE_ROUTING=$r; done
el "35B-A3B Q4_K_M beside llama.cpp"; compare 35b-q4km "" $(left 590)
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
