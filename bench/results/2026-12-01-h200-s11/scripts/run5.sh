#!/usr/bin/env bash
# Session 11, call 6 (final code): the CUDA suite, tg128 with 4 or 6 ring stages per warp (the
# faster is exported for the rest), serving, then the same-run comparison beside llama.cpp
# (built on the machine outside the repository meanwhile; LLAMA_BIN points at its bin folder).
W=/tmp/w11f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
# llama.cpp was built on the machine, outside the repository, while the tests ran; this
# script only expects LLAMA_BIN (its build/bin with llama-bench) and waits for it.
el "full suite"
timeout 170 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|rror" | grep -E "tg|rror" | tee -a $OUT/tg-stages.txt; }
for i in 1 2; do tg HOSTLM_CUDA_GEMV_STAGES=4; tg HOSTLM_CUDA_GEMV_STAGES=6; done
best=$(python3 - $OUT/tg-stages.txt <<'PY'
import sys, re
v = [float(re.findall(r"tg128 \| ([0-9.]+)", l)[0]) for l in open(sys.argv[1]) if "tg128" in l]
s4, s6 = sum(v[0::2]), sum(v[1::2])
print(6 if s6 > s4 else 4)
PY
)
export HOSTLM_CUDA_GEMV_STAGES=$best; echo "stages for the rest: $best"
el "serving"; timeout 80 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
el "waiting for llama.cpp"
while [ ! -x "${LLAMA_BIN:-/nonexistent}/llama-bench" ]; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 420 ] && break; done; sleep 5  # the link may still be finishing
el "compare"
DEPTHS=65536 REPS=2 STEP_TIMEOUT=100 RESULTS=$OUT/cmp timeout 240 bash tools/device/run_bench_compare.sh $B $M > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp/summary.md 2>/dev/null | head -20
el done
