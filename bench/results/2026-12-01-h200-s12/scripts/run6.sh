#!/usr/bin/env bash
# Session 12, call 6 (code of commit 59be547): the CUDA suite, the GPU memory of a depth-0 run
# in a process of its own, the same-run comparison beside llama.cpp (built on the machine,
# outside the repository, while the suite ran; LLAMA_BIN points at its bin folder), then the
# serving benchmark once the build no longer competes for the CPU.
W=/tmp/w12f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "full suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
el "depth 0 alone"
timeout 60 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/d0.json 2> $OUT/d0.err; echo "d0 rc $?"
python3 -c "import json,sys; [print(r['n_prompt'], r['n_gen'], r['n_depth'], round(r['avg_ts'],1), r['device_memory_used_peak']//2**20, 'MiB') for r in json.load(open(sys.argv[1]))]" $OUT/d0.json
el "waiting for llama.cpp"
while [ ! -x "${LLAMA_BIN:-/nonexistent}/llama-bench" ]; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 420 ] && break; done; sleep 5  # the link may still be finishing
el "compare"
DEPTHS=65536 REPS=2 STEP_TIMEOUT=100 RESULTS=$OUT/cmp timeout 240 bash tools/device/run_bench_compare.sh $B $M > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp/summary.md 2>/dev/null | head -20
el "serving"; timeout 80 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen" | tee $OUT/serving.txt
el done
