#!/usr/bin/env bash
# Session 29, call 1: issue 5's matrix beside llama.cpp (unslothai fork, built outside the
# repository in this call by .devcheck/start-llama.sh, never committed): the 9B Q8_0 and BF16
# shapes and the 27B Q4_K_M shape, pp512 and tg128 at depths 0, 16384 and 65536, two
# repetitions. The CUDA suite runs while llama.cpp builds and the files are written.
source bench/results/2026-12-04-h200-s29/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 9b-q8 9b Q8_0; make_file 27b-q4km 27b Q4_K_M; make_file 9b-bf16 9b BF16
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; df -h /tmp | tail -1
$B/bin/hostlm --version | head -1
el "cuda tests"
timeout 240 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "waiting for llama.cpp"; wait_llama
wait_file 9b-q8; el "9B Q8_0"; compare 9b-q8 16384,65536 $(left 585)
wait_file 9b-bf16; el "9B BF16"; compare 9b-bf16 16384,65536 $(left 585)
wait_file 27b-q4km; el "27B Q4_K_M"; compare 27b-q4km 16384,65536 $(left 585)
ls -la $W; df -h /tmp | tail -1
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-250
