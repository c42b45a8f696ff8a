#!/usr/bin/env bash
# Session 34, call 1 (main built here for sm_90): session 33's call 1, not run then.
#  - the whole CUDA suite: first GPU run of the cuda_backend.cpp split (889d339), of session 31's
#    review-mend tests and of session 32's chunked delta rule (CudaDeltaChunked);
#  - the chunked delta rule alone (bench_cuda_delta), its scan staged and through L1;
#  - 9B Q4_K_M pp512 with the chunked form off / on (64 tokens and up), alternating.
source bench/results/2026-12-05-h200-s34/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|Expected|Which is|actual" $OUT/cuda-tests.txt | head -40
el "delta rule alone: staged, then through L1"
HOSTLM_BENCH_CHUNKED_MIN=64 timeout 100 $B/bin/bench_cuda_delta 2>&1 | tee $OUT/op.txt
HOSTLM_CUDA_DELTA_CHUNKED_STAGED=0 HOSTLM_BENCH_CHUNKED_MIN=64 timeout 100 $B/bin/bench_cuda_delta 2>&1 | tee $OUT/op-l1.txt
wait_file 9b-q4km 150; el "9B Q4_K_M pp512, chunked off / on"
for s in 0 64 0 64; do
  echo -n "chunked $s: "
  HOSTLM_CUDA_DELTA_CHUNKED=$s timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 -o json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print(r['test'], round(r['avg_ts'],1), [round(x) for x in r['samples_ts']])"
done
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-250
