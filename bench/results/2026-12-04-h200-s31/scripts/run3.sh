#!/usr/bin/env bash
# Session 31, call 3: prefill kernels for the 64-stream run (conv1d over 16-row blocks, the
# gated RMSNorm a warp per row, zero fills by memset, dequantized tiles stored evict-first).
# The CUDA suite on the new library; then old (call 1's library, carried xz'd as
# .devlibs/old_libhostlm_cuda.so.xz) and new alternating: 64 streams, the op profile of the prefill-only run,
# the q4_K product at 2048 tokens, pp512.
source bench/results/2026-12-04-h200-s31/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
cp $B/lib/libhostlm_cuda.so $W/new.so; xz -dc $R/.devlibs/old_libhostlm_cuda.so.xz > $W/old.so
use() { cp $W/$1.so $B/lib/libhostlm_cuda.so; }
{
$B/bin/hostlm --version | head -1
el "cuda tests (new)"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/cuda-tests.txt | head -30
wait_file 9b-q4km 60
el "64 streams, old / new alternating"
for v in old new old new; do use $v; echo "-- $v"
  timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el "prefill-only profile"
for v in old new; do use $v; echo "-- $v"
  HOSTLM_CUDA_PROFILE=1 timeout 80 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 1 > $OUT/profile-$v.txt 2>&1
  grep -E "wall|matmul \(prefill|conv1d_silu |gated_rms|fill|^total|swiglu|add_rms" $OUT/profile-$v.txt; done
el "q4_K at 2048 tokens"
for v in old new; do use $v; echo "-- $v"; HOSTLM_BENCH_TOKENS=2048 timeout 60 $B/bin/bench_cuda_quant q4_K; done
el "pp512 alone"
for v in old new old new; do use $v; echo "-- $v"
  timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 -o json 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print(r['test'], round(r['avg_ts'],1))"; done
use new
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-250
