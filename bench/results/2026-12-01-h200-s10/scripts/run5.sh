#!/usr/bin/env bash
# Session 10, calls 5 to 7 (final code): the CUDA suite, serving, the tile product's
# small-matrix reduction under Nsight Compute, then the same-run comparison beside llama.cpp
# (built on the machine outside the repository meanwhile; LLAMA_BIN points at its bin folder).
# In call 5 that build failed; calls 6 and 7 ran with SKIP_TESTS=1 (call 6 found call 5's
# stale logs and returned at once; call 7 is the comparison in the results).
W=/tmp/w-$(date +%s)  # call 6 found call 5's logs in /tmp/w
source "$(dirname "$0")/device_env.sh"
# llama.cpp was built on the machine, outside the repository, while the tests ran; this
# script only expects LLAMA_BIN (its build/bin with llama-bench) and waits for the file
# $LLAMA_BIN/llama-bench to appear.
if [ -z "${SKIP_TESTS:-}" ]; then
el "full suite"
timeout 170 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
for i in 1 2; do el "serving"; timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,16,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el "ncu tile small"
timeout 60 $NCU --clock-control none -k regex:"tile_q4k" --launch-skip 600 --launch-count 4 --section SpeedOfLight $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 128 -n 24 > $OUT/ncu-tile.txt 2>&1; echo "ncu rc $?"
grep -E "tile_q4k.*Context|Duration" $OUT/ncu-tile.txt | cut -c1-150 | head -12
fi
wait_for_model
el "waiting for llama.cpp"
while [ ! -x "${LLAMA_BIN:-/nonexistent}/llama-bench" ]; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 400 ] && break; done
el "compare"
DEPTHS=65536 REPS=2 STEP_TIMEOUT=100 RESULTS=$OUT/cmp timeout 230 bash tools/device/run_bench_compare.sh $B $M > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp/summary.md 2>/dev/null | head -20
el done
