#!/usr/bin/env bash
# Session 22, call 2: the 16-bit single-token product with a rolling pipeline of loads
# (HOSTLM_CUDA_GEMV16_ROLL) and one or two rows per warp (HOSTLM_CUDA_GEMV16_ROWS): its tests,
# bench_cuda_quant bf16 at one token per setting, then 9B BF16 tg128 alternating settings.
tar xJf .devlibs/libs.tar.xz -C .devlibs
set -u; R=$PWD; B=$R/build-h200; W=/tmp/w22b; mkdir -p $W
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
el "tests"
for cfg in "" "HOSTLM_CUDA_GEMV16_ROWS=1" "HOSTLM_CUDA_GEMV16_ROLL=0" "HOSTLM_CUDA_GEMV16_DEPTH=8 HOSTLM_CUDA_GEMV16_ROWS=1"; do
  env $cfg timeout 60 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='CudaMatmul*:CudaOps.OneToken*' 2>&1 | grep -E "PASSED|FAILED|Failure" | head -5 | sed "s/^/[$cfg] /"
done
el "bench_cuda_quant bf16, one token"
for round in 1 2; do
for cfg in "HOSTLM_CUDA_GEMV16_ROLL=0" "X=1" "HOSTLM_CUDA_GEMV16_ROWS=1" "HOSTLM_CUDA_GEMV16_DEPTH=8" "HOSTLM_CUDA_GEMV16_DEPTH=8 HOSTLM_CUDA_GEMV16_ROWS=1" "HOSTLM_CUDA_GEMV16_DEPTH=2 HOSTLM_CUDA_GEMV16_ROWS=1" "HOSTLM_CUDA_GEMV16_DEPTH=2"; do
  env HOSTLM_BENCH_TOKENS=1 $cfg timeout 60 $B/bin/bench_cuda_quant bf16 2>&1 | sed "s/^/$cfg r$round | /"
done
done
el "waiting for the BF16 file"
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; done; tail -1 $W/gb.log
el "tg128 9B BF16"
for round in 1 2; do
for cfg in "HOSTLM_CUDA_GEMV16_ROLL=0" "X=1" "HOSTLM_CUDA_GEMV16_ROWS=1" "HOSTLM_CUDA_GEMV16_DEPTH=8 HOSTLM_CUDA_GEMV16_ROWS=1"; do
  echo "$cfg r$round $(env $cfg HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | sed -E 's/.*tg128 \| *([0-9.]+).*/tg128=\1/; s/.*(a replay ran [0-9.]+ us).*/\1/' | tr '\n' ' ')"
done
done
el "done"
