#!/usr/bin/env bash
# Session 12, call 7: scratch buffers sized one by one (the two that hold only attention or
# delta-rule outputs need 4,160 floats per token on the 9B, not the MLP's 12,288). CUDA model
# and quant tests, then the GPU memory at depth 0 and at depth 65,536, each in a process of
# its own (hostlm's own report, device_memory_used_peak), with pp512/tg128.
W=/tmp/w12g; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "model and quant tests"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Qwen*:*Quant*:*Graph*:*Step*:*LongContext*' > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
for d in 0 65536; do
  el "depth $d"
  timeout 100 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -d $d -r 2 -o json > $OUT/d$d.json 2> $OUT/d$d.err; echo "rc $?"
  python3 -c "import json,sys; [print(r['n_prompt'], r['n_gen'], r['n_depth'], round(r['avg_ts'],1), r['device_memory_used_peak']//2**20, 'MiB') for r in json.load(open(sys.argv[1]))]" $OUT/d$d.json
done
el done
