#!/usr/bin/env bash
# Session 17, call 1: first run of the device-side best logits (backends/cuda/best_logits.cu).
# Its test and the whole CUDA suite; then the engine bench (hostlm serve's sampling: top_k 40)
# at 1, 32 and 64 streams with HOSTLM_CUDA_BEST_LOGITS=0 and 1 in turn, with the graph timing;
# then two timing-only experiments on tg128 of the 9B and 0.8B Q4_K_M shapes (uncommitted
# switches: HOSTLM_X_SKIP_NORM leaves out the residual norms, HOSTLM_X_SKIP_DOWNLOAD the
# logits' copy), to size what folding the norm into the products, and the gap between steps,
# could give.
W=/tmp/w17a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
# This machine's libraries: cuBLAS from the image (or its Python wheel), libstdc++ carried
# only if the image's is older.
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  ldd $B/lib/libhostlm_cuda.so | grep "not found"
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
$B/bin/hostlm --version
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "best-logits test"
timeout 100 $B/bin/test_cuda_backend --gtest_filter='CudaBestLogits*' > $OUT/test-best.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|Expected|Which is|row|kind|ms\)" $OUT/test-best.txt | head -30
el "full CUDA suite"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
wait_for_model
for round in 1 2; do
  for best in 0 1; do
    el "engine bench round $round, HOSTLM_CUDA_BEST_LOGITS=$best"
    HOSTLM_CUDA_BEST_LOGITS=$best HOSTLM_CUDA_GRAPH_STATS=1 timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | tee -a $OUT/serving-best$best.txt
  done
done
tg() {  # file label [env]
  env ${3:-} HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2.json 2>$OUT/$2.err
  echo "$2 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$2.json 2>&1 | tail -1) | $(grep -o "a replay ran.*" $OUT/$2.err)"
}
el "tg experiments, 9B"
for round in 1 2; do
  tg $M 9b-plain-r$round; tg $M 9b-nonorm-r$round HOSTLM_X_SKIP_NORM=1; tg $M 9b-nodl-r$round HOSTLM_X_SKIP_DOWNLOAD=1
done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg experiments, 0.8B"
for round in 1 2; do
  tg $W/08b-q4km.gguf 08b-plain-r$round; tg $W/08b-q4km.gguf 08b-nonorm-r$round HOSTLM_X_SKIP_NORM=1; tg $W/08b-q4km.gguf 08b-nodl-r$round HOSTLM_X_SKIP_DOWNLOAD=1
done
el done
