#!/usr/bin/env bash
# Session 21, call 7: after the review refactor (one device helper for a new row's place in the
# pages, shared by kv_store and qk_norm_rope_store; one backend path for the delta rule with
# and without its norm; the store test also checks which launches ran): the whole CUDA suite,
# then tg128 on the 0.8B Q4_K_M shape.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
set -u; R=$PWD; B=$R/build-h200; W=/tmp/w21g; mkdir -p $W
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
timeout 170 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
wait; tail -1 $W/g08.log
HOSTLM_CUDA_GRAPH_STATS=1 timeout 30 $B/bin/hostlm bench $W/08b.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-160
