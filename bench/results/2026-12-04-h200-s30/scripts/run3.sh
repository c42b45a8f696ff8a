#!/usr/bin/env bash
# Session 30, call 3 (warm machine of call 2, its files kept): the 27B Q4_K_M at depth beside
# llama.cpp (call 2's ran out of time), and the 9B Q8_0 at 64K with the FMA / tensor-core
# attention (the 9B's group of 4).
source bench/results/2026-12-04-h200-s30/scripts/env.sh
pkill -f llama-bench; pkill -f "hostlm bench"; sleep 1
rm -f $W/27b-q8.gguf; make_file 9b-q8 9b Q8_0
tg() { # FILE DEPTH LABEL ENV...
  local f=$1 d=$2 label=$3; shift 3
  env "$@" timeout 100 $B/bin/hostlm bench $W/$f.gguf --backend cuda -p 0 -n 128 -d $d -r 2 -o json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print('$f d$d $label:', r['test'], round(r['avg_ts'],1), [round(x,1) for x in r['samples_ts']], round(r['device_memory_used_peak']/2**20))"
}
{
el "27B Q4_K_M"; compare 27b-q4km 16384,65536 300
wait_file 9b-q8; el "9B Q8_0 at 64K, mma 0 / 1"
for m in 0 1 0 1; do tg 9b-q8 65536 "mma $m" HOSTLM_CUDA_ATTENTION_MMA=$m; done
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
