#!/usr/bin/env bash
# Session 29, call 5: the split decode attention streaming F16 rows through shared memory
# (paged_attention_stream_kernel; from 2,048 keys, HOSTLM_CUDA_ATTENTION_STREAM_MIN) against
# the register-fed kernel of call 4 (STREAM_MIN=1000000000): CUDA suite (default, then the
# paged-KV and logits tests with every F16 split launch streamed), the attention alone with
# its GPU time (HOSTLM_CUDA_PROFILE=1), and tg128 of the 27B Q4_K_M and 9B Q8_0 shapes after
# 16K/64K-token prefixes, alternating. hostlm only: llama.cpp's figures are calls 1 and 4's.
source bench/results/2026-12-04-h200-s29/scripts/env.sh
make_file 27b-q4km 27b Q4_K_M; make_file 9b-q8 9b Q8_0
OLD=1000000000
tg() { # FILE DEPTH STREAM_MIN
  HOSTLM_CUDA_ATTENTION_STREAM_MIN=$3 timeout 90 $B/bin/hostlm bench $W/$1.gguf --backend cuda -p 0 -n 128 -d $2 -r 2 -o json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print('$1 d$2 stream_min $3:', r['test'], round(r['avg_ts'],1), [round(x,1) for x in r['samples_ts']], round(r['device_memory_used_peak']/2**20))"
}
{
$B/bin/hostlm --version | head -1
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "cuda tests, every F16 split launch streamed"
HOSTLM_CUDA_ATTENTION_STREAM_MIN=0 timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Paged*:*Graph*:*Logits*:*LongContext*:*Engine*' > $OUT/cuda-tests-stream0.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests-stream0.txt | head -12
el "attention alone"
for m in $OLD 2048; do echo "-- stream_min $m"
  HOSTLM_CUDA_PROFILE=1 HOSTLM_CUDA_ATTENTION_STREAM_MIN=$m timeout 60 $B/bin/bench_cuda_attention 4096 16384 65536 2>&1 | grep -E "^f16|paged_attention"
done
wait_file 27b-q4km; el "27B Q4_K_M tg128 at depth"
for round in 1 2; do for m in $OLD 2048; do tg 27b-q4km 65536 $m; done; done
for m in $OLD 2048; do tg 27b-q4km 16384 $m; done
wait_file 9b-q8; el "9B Q8_0 tg128 at depth"
for m in $OLD 2048; do tg 9b-q8 65536 $m; done
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-250
