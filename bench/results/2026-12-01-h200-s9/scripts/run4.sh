#!/usr/bin/env bash
# Session 9, call 4: full CUDA suite with the fused activation quantization; fused on/off;
# 64K decode; serving; 27B.
set -u
R=$PWD
B=$R/build-h200
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
W=/tmp/w; mkdir -p $W
( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz; export PYTHONPATH=$W/llama/gguf-py; cd $R; python3 tools/make_shape_gguf.py 9b $W/9b-q4km.gguf --type Q4_K_M > $W/gguf.log 2>&1; echo "gguf rc $?" >> $W/gguf.log; python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/gguf27.log 2>&1; echo "gguf rc $?" >> $W/gguf27.log ) &
t0=$(date +%s)
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
el tests
timeout 120 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
while ! grep -q "gguf rc" $W/gguf.log 2>/dev/null; do sleep 2; done; tail -1 $W/gguf.log
M=$W/9b-q4km.gguf
for f in 0 1 0 1; do el "tg fused=$f"; HOSTLM_CUDA_FUSED_QUANT=$f HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|graph|fullest" ; done
el "d65536"
timeout 90 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -d 65536 -r 2 2>&1 | grep -E "^\| qwen|fullest"
el "serving"
timeout 100 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
el "serving fused=0"
HOSTLM_CUDA_FUSED_QUANT=0 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 1,8 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
el "27b"
while ! grep -q "gguf rc" $W/gguf27.log 2>/dev/null; do sleep 2; done; tail -1 $W/gguf27.log
timeout 70 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|fullest"
el done
