#!/usr/bin/env bash
# Session 26, call 2: the 16-bit ring's epilogues (branch wip/bf16-epilogues): the decode
# conv1d of the delta-rule layers and the MLP's SwiGLU in the one-token BF16/F16 product.
# Their tests and the whole CUDA suite; tg128 of the 9B BF16 with HOSTLM_CUDA_FUSE_SWIGLU /
# HOSTLM_CUDA_FUSE_CONV on and off alternating; then beside llama.cpp (built outside the
# repository in this call) on the 9B BF16 and Q4_K_M.
tar xJf .devlibs/libs.tar.xz -C .devlibs
bash .devcheck/start-llama.sh
W=/tmp/w26; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
setsid bash -c "cd $R; sleep 3; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log" > /dev/null 2>&1 < /dev/null &
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
L=/tmp/llama17
{
el "new tests"
timeout 90 $B/bin/test_cuda_backend --gtest_filter='*OneToken16Bit*:*Convolved*:*Grouped*' --gtest_brief=1 2>&1 | grep -E "^\[  |Failure|row |step" | head -20
el "cuda tests"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -20
el "waiting for the BF16 file"
for i in $(seq 1 300); do grep -q "gb rc" $W/gb.log 2>/dev/null && break; sleep 1; done; tail -1 $W/gb.log
for r in 1 2; do for f in "1 1" "0 0" "1 0" "0 1"; do set -- $f
  el "tg128 9b-bf16, swiglu $1 conv $2"
  HOSTLM_CUDA_FUSE_SWIGLU=$1 HOSTLM_CUDA_FUSE_CONV=$2 HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-160
done; done
el "waiting for llama.cpp"
for i in $(seq 1 200); do grep -q "llama rc" $L/llama-build.log 2>/dev/null && break; sleep 2; done; tail -1 $L/llama-build.log
wait_for_model
el "compare, depth 0"
DEPTHS="" REPS=2 STEP_TIMEOUT=60 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp timeout 150 bash tools/device/run_bench_compare.sh $B $W/9b-bf16.gguf $W/9b-q4km.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp/summary.md
rm -rf $OUT/cmp/raw
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-170
