#!/usr/bin/env bash
# Session 20, call 6 (branch wip/logits-to-host): single-token products write each warp's rows
# in one store, and a single sequence's logits are written by the output product straight
# into the caller's pinned array (HOSTLM_CUDA_LOGITS_TO_HOST=0: multiplied into device memory
# and downloaded, as before). The whole CUDA suite; tg128 on the 9B and 0.8B Q4_K_M shapes,
# two rounds alternating on / off, with the graph statistics.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w20f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "full CUDA suite"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err) | $(grep -o "came back in .*" $W/$l.err)"
}
wait_for_model
el "tg128, 9B Q4_K_M: direct / off"
for round in 1 2; do tg $M 9b-on-r$round; tg $M 9b-off-r$round HOSTLM_CUDA_LOGITS_TO_HOST=0; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B Q4_K_M: direct / off"
for round in 1 2; do tg $W/08b-q4km.gguf 08b-on-r$round; tg $W/08b-q4km.gguf 08b-off-r$round HOSTLM_CUDA_LOGITS_TO_HOST=0; done
el done
