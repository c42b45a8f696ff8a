#!/usr/bin/env bash
# Session 14, call 6: the fused query/key preparation of attention (Backend::qk_norm_rope).
# The CUDA suite (with the fused-vs-separate-ops test), then tg128 of the 9B and 0.8B Q4_K_M
# shapes with the graph timing, and serving at 1, 8, 32 and 64 streams.
W=/tmp/w14f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; cd $W; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
el "full suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|worst at" $OUT/cuda-tests.txt | head -20
wait_for_model
export HOSTLM_CUDA_GRAPH_STATS=1
tg() {  # file label
  timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2.json 2>$OUT/$2.err
  echo "$2 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$2.json 2>&1 | tail -1) | $(grep -o "a replay ran.*" $OUT/$2.err)"
}
el "9b tg"
for round in 1 2; do tg $M 9b-r$round; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "0.8b tg"
for round in 1 2; do tg $W/08b-q4km.gguf 08b-r$round; done
unset HOSTLM_CUDA_GRAPH_STATS
el "serving"
timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|engine:" | tee $OUT/serving.txt
el done
