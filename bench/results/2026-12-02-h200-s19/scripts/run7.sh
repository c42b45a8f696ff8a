#!/usr/bin/env bash
# Session 19, call 7 (the last ~300 s of device time): the final build (early gate loads of
# mul_sigmoid added) through the new tests and the whole CUDA suite; tg128 of the 9B Q4_K_M
# shape with the defaults; the engine bench at 64 streams with prompt chunks of 2048 tokens
# per step (the default) and 4096 (-b 4096).
W=/tmp/w19g; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
el "new tests"
timeout 60 $B/bin/test_cuda_backend --gtest_filter='*RightAfter*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|worst" | head
el "full CUDA suite"
timeout 150 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
wait_for_model
el "tg128, 9B Q4_K_M"
for r in 1 2; do
  HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $M --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "tg128|a replay ran" | cut -c1-160
done
el "engine bench, 64 streams, -b 2048 then 4096"
for b in 2048 4096; do
  timeout 45 $B/bin/hostlm bench $M --backend cuda --parallel 64 -b $b -p 512 -n 128 2>&1 | grep -E "^\| qwen" | sed "s/^/b=$b /"
done
el done
