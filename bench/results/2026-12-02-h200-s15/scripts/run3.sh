#!/usr/bin/env bash
# Session 15, call 3: what each of the two fusions is worth. tg128 of the 0.8B and 9B Q4_K_M
# shapes and the 9B Q8_0 shape with both fusions, with neither, and with each alone
# (HOSTLM_CUDA_FUSE_DELTA_NORM=0, HOSTLM_CUDA_FUSE_SWIGLU=0), in turn, with the graph timing;
# the fused-op tests first.
W=/tmp/w15c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; cd $W; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log ) &
el "fused-op tests"
timeout 100 $B/bin/test_cuda_backend --gtest_filter='*MatmulSwiglu*:*DeltaRuleWithNorm*:*CudaQwen35*:CudaGraphReplay.*' --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|exception" $OUT/cuda-tests.txt | head -16
export HOSTLM_CUDA_GRAPH_STATS=1
tg() {  # delta swiglu file label
  HOSTLM_CUDA_FUSE_DELTA_NORM=$1 HOSTLM_CUDA_FUSE_SWIGLU=$2 timeout 60 $B/bin/hostlm bench $3 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$4.json 2>$OUT/$4.err
  echo "$4 delta=$1 swiglu=$2 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$4.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us.*apart" $OUT/$4.err)"
}
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "0.8b"
for round in 1 2; do tg 1 1 $W/08b-q4km.gguf 08b-11-r$round; tg 0 0 $W/08b-q4km.gguf 08b-00-r$round; tg 1 0 $W/08b-q4km.gguf 08b-10-r$round; tg 0 1 $W/08b-q4km.gguf 08b-01-r$round; done
wait_for_model
el "9b q4km"
for round in 1 2; do tg 1 1 $M 9b-11-r$round; tg 0 0 $M 9b-00-r$round; tg 1 0 $M 9b-10-r$round; tg 0 1 $M 9b-01-r$round; done
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done
el "9b q8_0"
tg 1 1 $W/9b-q80.gguf q80-11; tg 0 0 $W/9b-q80.gguf q80-00; tg 1 0 $W/9b-q80.gguf q80-10; tg 0 1 $W/9b-q80.gguf q80-01
el done
