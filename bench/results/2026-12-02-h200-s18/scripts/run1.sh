#!/usr/bin/env bash
# Session 18, call 1: two decode launches fewer per layer.
#  - The attention output gate reads its gates in place (modules.cpp): no copy_rows graph node
#    before mul_sigmoid in each full-attention layer.
#  - The delta-rule layer's conv1d runs in the epilogue of the one-token product of its qkv
#    rows (matmul_same_input_conv1d, ConvStep); HOSTLM_CUDA_FUSE_CONV=0 launches it apart.
# The new GPU test, then the whole CUDA suite; then tg128 on the 9B and 0.8B Q4_K_M shapes in
# three builds, alternating: "base" = libhostlm.so built from main's modules.cpp (the gate copy)
# with the conv apart, "gate" = this tree with the conv apart, "both" = this tree.
W=/tmp/w18; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  ldd $B/lib/libhostlm_cuda.so | grep "not found"
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
$B/bin/hostlm --version
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "conv epilogue test"
timeout 100 $B/bin/test_cuda_backend --gtest_filter='*Convolved*:*SameInput*:*Conv*' > $OUT/test-conv.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|Expected|Which is|conv|state" $OUT/test-conv.txt | head -30
el "full CUDA suite"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
wait_for_model
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$l.json 2>$OUT/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $OUT/$l.err)"
}
BASE_LD=$R/.devlibs/base:$LD_LIBRARY_PATH
el "tg128, 9B"
for round in 1 2 3; do
  tg $M 9b-base-r$round LD_LIBRARY_PATH=$BASE_LD HOSTLM_CUDA_FUSE_CONV=0
  tg $M 9b-gate-r$round HOSTLM_CUDA_FUSE_CONV=0
  tg $M 9b-both-r$round
done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B"
for round in 1 2 3; do
  tg $W/08b-q4km.gguf 08b-base-r$round LD_LIBRARY_PATH=$BASE_LD HOSTLM_CUDA_FUSE_CONV=0
  tg $W/08b-q4km.gguf 08b-gate-r$round HOSTLM_CUDA_FUSE_CONV=0
  tg $W/08b-q4km.gguf 08b-both-r$round
done
el "engine bench, 1/32/64 streams, base then both"
for v in base both; do
  if [ $v = base ]; then e="LD_LIBRARY_PATH=$BASE_LD HOSTLM_CUDA_FUSE_CONV=0"; else e=""; fi
  env $e HOSTLM_CUDA_GRAPH_STATS=1 timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | sed "s/^/$v /"
done
el done
