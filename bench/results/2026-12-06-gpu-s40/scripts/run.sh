#!/usr/bin/env bash
# Session 40: the one call session 39's run1.sh and run2.sh were written for, in one, since
# device machines came rarely (seven refusals before this). Build A = main of session 38
# (.devcarry/h200.tar.xz); build M = branch merge-s40 = main of session 40 (--n-cpu-moe) with
# wip/ksplit merged in (.devcarry/h200-b.tar.xz, paths build-h200-b/): PRMT selectors, k-slice
# warps (HOSTLM_CUDA_TILE_K_SLICES, off by default), grouped tile launches (on), prefill chunk
# order. llama-server builds in the background from the start (CPU only; the GPU comparisons
# below alternate A and M, so both see the same load); the servers are compared last.
source bench/results/2026-12-05-h200-s37/scripts/env.sh
nice -n 15 bash .devcheck/start-llama-server.sh  # below the tests and the file maker
tar xJf .devcarry/h200-b.tar.xz; M=$R/build-h200-b
echo "{\"source_dir\": \"$R\"}" > $M/hostlm-build-tree.json
with_build() { local b=$1; shift; env HOSTLM_BUILD_DIR=$b HOSTLM_LIBRARY=$b/lib/libhostlm.so LD_LIBRARY_PATH=$b/lib:$LD_LIBRARY_PATH "$@"; }
make_file 9b-q4km 9b Q4_K_M
{
el "cuda tests, M, k slices 16,32,64"
with_build $M HOSTLM_CUDA_TILE_K_SLICES=16,32,64 timeout 240 $M/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests-m-ks.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|tests from .* ran" $OUT/cuda-tests-m-ks.txt | head -20
el "cuda product and logits tests, M, default"
with_build $M timeout 90 $M/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='CudaQuant*:*Logits*:*Qwen35*' > $OUT/cuda-tests-m.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests-m.txt | head -20
for t in 64 32; do
  for v in "A $B" "M $M" "M-ks $M HOSTLM_CUDA_TILE_K_SLICES=16,32,64"; do
    set -- $v
    el "products alone, T=$t, $1"
    with_build $2 $3 HOSTLM_BENCH_TOKENS=$t timeout 40 $2/bin/bench_cuda_quant q4_K q6_K 2>&1 | grep -E "T="
  done
done
wait_file 9b-q4km 240
round1=("A $B" "M-nogroups $M HOSTLM_CUDA_TILE_GROUPS=0" "M $M" "M-ks $M HOSTLM_CUDA_TILE_K_SLICES=32,64" "M-ks64 $M HOSTLM_CUDA_TILE_K_SLICES=64")
round2=("A $B" "M $M" "M-ks $M HOSTLM_CUDA_TILE_K_SLICES=32,64")
for i in 1 2; do
  [ $i = 1 ] && runs=("${round1[@]}") || runs=("${round2[@]}")
  for v in "${runs[@]}"; do
    set -- $v
    el "9B 32, 64 streams, $1 $3"
    with_build $2 $3 timeout 40 $2/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
for v in "A $B" "M $M"; do
  set -- $v
  el "pp2048, $1"
  with_build $2 timeout 40 $2/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 2048 -n 0 -r 2 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
done
el "profile, 64 streams, M k slices 32,64"
with_build $M HOSTLM_CUDA_TILE_K_SLICES=32,64 HOSTLM_CUDA_PROFILE=2 timeout 40 $M/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $OUT/9b-64-profile-ks.txt 2>&1
head -40 $OUT/9b-64-profile-ks.txt | cut -c1-130
el "llama.cpp build"
for i in $(seq 1 $(( $(left 420) / 2 ))); do grep -q "llama rc" /tmp/llama/build.log 2>/dev/null && break; sleep 2; done
tail -2 /tmp/llama/build.log; ls -la $L/llama-server
el "serving side by side, M (default switches)"
LLAMA_BIN=$L STREAMS=32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 RESULTS=$OUT/serving \
  timeout $(left 585) bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $M > $OUT/serving-log.txt 2>&1
echo "compare rc $?"
cat $OUT/serving/summary.md 2>/dev/null || tail -20 $OUT/serving-log.txt
el done
} 2>&1 | tee $OUT/run.txt | cut -c1-250
