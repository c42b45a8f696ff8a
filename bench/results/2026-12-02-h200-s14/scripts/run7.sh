#!/usr/bin/env bash
# Session 14, call 7 (final code): the fixed fused-attention test, then the same-run
# comparison beside llama.cpp (built on the machine, outside the repository, while the files
# are written; LLAMA_BIN points at its bin folder): 9B BF16, Q8_0 and Q4_K_M shapes, pp512
# and tg128, two repetitions each.
W=/tmp/w14g; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( while [ ! -d $W/gguf-py ]; do sleep 1; done; sleep 2; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/g8.log 2>&1
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "bf16 rc $?" >> $W/gb.log ) &
el "fused attention test"
timeout 60 $B/bin/test_cuda_backend --gtest_filter='CudaOps.*' --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|worst at" $OUT/cuda-tests.txt | head -12
wait_for_model
while ! grep -q "bf16 rc" $W/gb.log 2>/dev/null; do sleep 2; done; el "files written"; tail -1 $W/gb.log
el "waiting for llama.cpp"
while [ ! -x "${LLAMA_BIN:-/nonexistent}/llama-bench" ]; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 400 ] && break; done; sleep 5
el "compare"
DEPTHS="" REPS=2 STEP_TIMEOUT=120 RESULTS=$OUT/cmp timeout 300 bash tools/device/run_bench_compare.sh $B $W/9b-bf16.gguf $W/9b-q80.gguf $M > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp/summary.md 2>/dev/null | head -30
el done
