#!/usr/bin/env bash
# Session 22, call 1 (branch wip/review-refactor, 5a7facd): the whole CUDA suite after the
# review refactor; tg128 on the 0.8B and 9B Q4_K_M shapes; the single-token products' rates per
# shape for BF16 and Q8_0 (bench_cuda_quant); an op profile of the engine bench at 64 streams.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w22a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
( export PYTHONPATH=$W/gguf-py; sleep 5
  python3 tools/make_shape_gguf.py 0.8b $W/08b.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
el "bench_cuda_quant bf16 q8_0"
timeout 150 $B/bin/bench_cuda_quant bf16 q8_0 q4_K 2>&1 | grep -E "T=1 |T=8 |T=32 " | tee $OUT/quant-bench.txt
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128 0.8B"
for r in 1 2; do
  HOSTLM_CUDA_GRAPH_STATS=1 timeout 30 $B/bin/hostlm bench $W/08b.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
done
wait_for_model
el "tg128 9B Q4_K_M"
for r in 1 2; do
  HOSTLM_CUDA_GRAPH_STATS=1 timeout 40 $B/bin/hostlm bench $M --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
done
el "engine bench 64 streams, op profile"
HOSTLM_CUDA_PROFILE=1 timeout 90 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 > $OUT/profile64.txt 2>&1; echo "rc $?"
head -40 $OUT/profile64.txt
el "engine bench 64 streams, no profile"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-250
el "done"
