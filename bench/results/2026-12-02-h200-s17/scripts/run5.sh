#!/usr/bin/env bash
# Session 17, call 5: the fold with its counter taken after the products (release/acquire,
# no full fence): its test, one 9B decode step's kernel times with it, and tg128 of the 9B
# and 0.8B Q4_K_M shapes with the fold on and off in turn; then the whole CUDA suite. The
# best-logits kernel now takes its counter the same way (its test runs first).
W=/tmp/w17e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
el "folded-norm test"
timeout 100 $B/bin/test_cuda_backend --gtest_filter='CudaFoldedNorm*:*ProducedQuantized*:CudaBestLogits*' > $OUT/test-fold.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ|Which is|cols " $OUT/test-fold.txt | head -40
wait_for_model
( export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
for fold in 1; do
  el "profile, HOSTLM_CUDA_FOLD_NORM=$fold"
  HOSTLM_CUDA_FOLD_NORM=$fold SKIP=3000 COUNT=420 RESULTS=$OUT/prof$fold timeout 200 bash tools/device/profile_decode.sh $B $M > /dev/null 2>&1; echo "rc $?"
  head -20 $OUT/prof$fold/summary.txt
done
tg() {  # file label [env]
  env ${3:-} HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2.json 2>$OUT/$2.err
  echo "$2 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$2.json 2>&1 | tail -1) | $(grep -o "a replay ran.*" $OUT/$2.err)"
}
el "tg128, 9B"
for round in 1 2; do tg $M 9b-fold-r$round; tg $M 9b-apart-r$round HOSTLM_CUDA_FOLD_NORM=0; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B"
for round in 1 2; do tg $W/08b-q4km.gguf 08b-fold-r$round; tg $W/08b-q4km.gguf 08b-apart-r$round HOSTLM_CUDA_FOLD_NORM=0; done
rm -f $OUT/*.json
el "full CUDA suite"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
el done
