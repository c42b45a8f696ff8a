#!/usr/bin/env bash
# Session 12, call 3: the norm inside the single-token GEMV that reads it and the residual add
# inside the one that writes it (Backend::rms_norm_matmul / matmul_add, plugin ABI 7). Full CUDA
# suite, tg128 A/B (HOSTLM_CUDA_FUSE_NORM_ADD=0 is the previous path), then pp512/tg128 at
# depth 0 and 65536 with the GPU memory each reports.
W=/tmp/w12c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
el "full suite"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"; grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|bound|Expected|Which|memcmp|cols" $OUT/cuda-tests.txt | head -30
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 2 2>&1 | grep -E "^\| qwen|rror" | tee -a $OUT/tg-ab.txt; }
for i in 1 2; do tg HOSTLM_CUDA_FUSE_NORM_ADD=0; tg HOSTLM_CUDA_FUSE_NORM_ADD=1; done
el "depths"
timeout 150 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -d 0,65536 -r 2 -o json > $OUT/depths.json 2> $OUT/depths.err; echo "depths rc $?"
python3 - $OUT/depths.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
rows = d if isinstance(d, list) else d.get("results", d.get("tests", []))
for r in rows:
    print({k: r[k] for k in r if any(s in k for s in ("n_prompt", "n_gen", "n_depth", "avg_ts", "vram", "gpu", "memory"))})
PY
el done
