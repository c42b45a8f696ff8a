#!/usr/bin/env bash
# Session 11, call 8: the committed code (6a3578c plus the allocation log): CUDA suite, tg128,
# where the GPU memory goes (HOSTLM_CUDA_ALLOC_LOG=1), and the prefill weight tile at 16 Mi
# weights against the default 32 Mi (pp512 and the peak memory).
W=/tmp/w11h; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "full suite"
timeout 170 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran" $OUT/cuda-tests.txt | head -20
wait_for_model
bn() { el "bench $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/bench.json 2> $OUT/bench.err
  python3 -c "
import json; rs = json.load(open('$OUT/bench.json'))
print('  '.join('%s %.1f t/s, peak %.0f MiB' % (r['test'], r['avg_ts'], r['device_memory_used_peak'] / 2**20) for r in rs))"; }
bn X=default
bn HOSTLM_CUDA_PREFILL_TILE_MI=16
bn HOSTLM_CUDA_ALLOC_LOG=1
grep "^cuda alloc" $OUT/bench.err | awk -F'\t' '{w=$3; sub(/tensor .*/,"tensors",w); sub(/an activation buffer/,"activation buffers",w); s[w]+=$2; n[w]++} END {for (k in s) printf "%10.1f MiB %5d  %s\n", s[k]/1048576, n[k], k}' | sort -rn | tee $OUT/alloc-summary.txt
el done
