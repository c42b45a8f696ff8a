#!/usr/bin/env bash
# Session 12, call 8 (code of 885e02b): 9B Q8_0 (issue 5's goal: tg128 >= 400 t/s) and 0.8B
# Q4_K_M (goal: >= 1,100 t/s), hostlm alone, both files written on the machine. Not run:
# llama.cpp beside it (no device time left for its build).
set -u
R=$PWD; B=$R/build-h200; W=/tmp/w12h; mkdir -p $W
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz )
export PYTHONPATH=$W/gguf-py
python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1 &
python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/g9.log 2>&1 &
wait; el "files written"; ls -la $W/*.gguf | cut -c20-
for m in 08b-q4km 9b-q80; do
  el "$m"; timeout 60 $B/bin/hostlm bench $W/$m.gguf --backend cuda -p 512 -n 128 -r 3 2>&1 | grep -E "^\| qwen|rror" | tee -a $OUT/alone.txt
done
el done
