#!/usr/bin/env bash
# Session 9, call 3: full CUDA suite with PDL; PDL on/off; 64K decode; serving with both tile bounds.
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
timeout 170 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
failed=$(grep -E "^\[  FAILED  \] [A-Za-z]" $OUT/cuda-tests.txt | awk '{print $4}' | sort -u | paste -sd: -)
if [ -n "$failed" ]; then el "failed ones with PDL off: $failed"; HOSTLM_CUDA_PDL=0 timeout 60 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter="$failed" 2>&1 | tail -8; fi
while ! grep -q "gguf rc" $W/gguf.log 2>/dev/null; do sleep 2; done; tail -1 $W/gguf.log
M=$W/9b-q4km.gguf
for pdl in 0 1 0 1; do el "tg pdl=$pdl"; HOSTLM_CUDA_PDL=$pdl HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|graph|fullest" ; done
el "d65536"
timeout 90 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -d 65536 -r 2 2>&1 | grep -E "^\| qwen"
el "serving"
timeout 100 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
el "serving relaxed"
HOSTLM_CUDA_TILE_RELAXED=1 timeout 80 $B/bin/hostlm bench $M --backend cuda --parallel 8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
el "serving pdl=0"
HOSTLM_CUDA_PDL=0 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
el "27b"
if [ $(( $(date +%s) - t0 )) -lt 380 ]; then
  while ! grep -q "gguf rc" $W/gguf27.log 2>/dev/null; do sleep 2; done; tail -1 $W/gguf27.log
  timeout 70 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|fullest"
fi
el done
