#!/usr/bin/env bash
# Session 12, call 9 (warm machine of call 8, code of 885e02b): 9B BF16 (issue 5's goal: 85%
# of the weight-streaming bound) and the 27B Q4_K_M GPU memory at depth 0 (llama.cpp held
# 16,397 MiB on that file in session 8), hostlm alone; files written on the machine.
set -u
R=$PWD; B=$R/build-h200; W=/tmp/w12h
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
export PYTHONPATH=$W/gguf-py
rm -f $W/9b-q80.gguf
python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1 &
python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/g27.log 2>&1 &
wait %1; el "bf16 written"
timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/bf16.json 2>/dev/null
python3 -c "import json,sys; [print(r['n_prompt'], r['n_gen'], round(r['avg_ts'],1), r['device_memory_used_peak']//2**20, 'MiB') for r in json.load(open(sys.argv[1]))]" $OUT/bf16.json
ls -la $W/9b-bf16.gguf | cut -c20-; rm -f $W/9b-bf16.gguf
wait; el "27b written"; tail -1 $W/g27.log
timeout 60 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/27b.json 2>/dev/null
python3 -c "import json,sys; [print(r['n_prompt'], r['n_gen'], round(r['avg_ts'],1), r['device_memory_used_peak']//2**20, 'MiB') for r in json.load(open(sys.argv[1]))]" $OUT/27b.json
el done
