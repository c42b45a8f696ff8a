#!/usr/bin/env bash
# Session 30, call 6 (the last of the device budget): how many blocks the tensor-core split
# attention launches, 2 or 3 or 4 waves of the SMs (HOSTLM_CUDA_ATTENTION_MMA_WAVES; the kernel
# fits 3 blocks an SM, the split count aimed at 2): the attention alone, then the 27B Q8_0's
# tg128 at 64K per setting.
source bench/results/2026-12-04-h200-s30/scripts/env.sh
make_file 27b-q8 27b Q8_0
tg() { # FILE DEPTH LABEL ENV...
  local f=$1 d=$2 label=$3; shift 3
  env "$@" timeout 100 $B/bin/hostlm bench $W/$f.gguf --backend cuda -p 0 -n 128 -d $d -r 2 -o json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print('$f d$d $label:', r['test'], round(r['avg_ts'],1), [round(x,1) for x in r['samples_ts']], round(r['device_memory_used_peak']/2**20))"
}
{
el "attention alone"
for w in 2 3 4; do echo "-- waves $w"
  HOSTLM_CUDA_ATTENTION_MMA_WAVES=$w timeout 40 $B/bin/bench_cuda_attention 16384 65536 2>&1 | grep -E "^f16"
done
wait_file 27b-q8 120; el "27B Q8_0 tg128 at 64K"
for w in 2 3 4; do tg 27b-q8 65536 "waves $w" HOSTLM_CUDA_ATTENTION_MMA_WAVES=$w; done
el done
} 2>&1 | tee $OUT/call6.txt | cut -c1-250
