#!/usr/bin/env bash
# Session 26, call 3: the landed form (the 16-bit convolution epilogue off unless
# HOSTLM_CUDA_FUSE_CONV16=1): the new tests, the whole CUDA suite, and tg128 of the 9B BF16
# by default and with HOSTLM_CUDA_FUSE_CONV16=1, alternating.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w26b; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
setsid bash -c "cd $R; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log" > /dev/null 2>&1 < /dev/null &
{
el "new tests"
timeout 90 $B/bin/test_cuda_backend --gtest_filter='*OneToken16Bit*:*Convolved*:*Grouped*' --gtest_brief=1 2>&1 | grep -E "^\[  |Failure|row |step" | head -20
el "cuda tests"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -20
el "waiting for the BF16 file"
for i in $(seq 1 300); do grep -q "gb rc" $W/gb.log 2>/dev/null && break; sleep 1; done; tail -1 $W/gb.log
for r in 1 2; do for c in 0 1; do
  el "tg128 9b-bf16, conv16 $c"
  HOSTLM_CUDA_FUSE_CONV16=$c HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-160
done; done
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-170
