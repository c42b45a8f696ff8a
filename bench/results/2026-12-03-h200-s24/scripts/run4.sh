#!/usr/bin/env bash
# Session 24, call 4: the committed form (cp.async ring only, 512x6 by default, 1024x3 and 0
# by HOSTLM_CUDA_GEMV16_RING): the whole CUDA suite, the product alone, 9B BF16 tg128 against
# gemv.cu's kernel (ring 0), alternating.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w24f; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; ( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
el "product alone"
for ring in default 0 1024x3; do
  echo "-- ring $ring"; HOSTLM_CUDA_GEMV16_RING=$ring HOSTLM_BENCH_TOKENS=1 timeout 60 $B/bin/bench_cuda_quant bf16 f16 2>&1 | grep -E "T="
done | tee $OUT/quant-bench.txt
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 330 ] && break; done; tail -1 $W/gb.log
for r in 1 2; do for ring in default 0; do
  el "tg128 9B BF16, ring $ring"
  HOSTLM_CUDA_GEMV16_RING=$ring HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-220
done; done
el done
