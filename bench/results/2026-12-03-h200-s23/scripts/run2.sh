#!/usr/bin/env bash
# Session 23, call 2: the Q4_K tile product's stages filled by bulk copies with mbarriers
# (sm_90) instead of cp.async and a block barrier per chunk. The whole CUDA suite; the product
# alone at 16, 32 and 64 tokens, bulk against cp.async (HOSTLM_CUDA_TILE_BULK=0); the engine
# bench at 32 and 64 streams, alternating; Nsight Compute on the 12288 x 4096 product at 64
# tokens with bulk copies.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w23b; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "cuda tests"
timeout 240 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
el "tile product alone, bulk / cp.async"
for r in 1 2; do for b in 1 0; do
  echo "-- bulk=$b"; HOSTLM_CUDA_TILE_BULK=$b HOSTLM_BENCH_TOKENS=16,32,64 timeout 60 $B/bin/bench_cuda_quant q4_K 2>&1 | grep -E "T=" 
done; done | tee $OUT/quant-bench.txt
el "ncu bulk 12288 x 4096, 64 tokens"
HOSTLM_BENCH_TOKENS=64 timeout 100 $NCU --set full --import-source no -k regex:tile_q4k --launch-skip 60 --launch-count 1 -o $W/tile64b $B/bin/bench_cuda_quant q4_K > $W/ncu.txt 2>&1; echo "ncu rc $?"
$NCU --import $W/tile64b.ncu-rep --page details > $W/tile64b-details.txt 2>&1
$NCU --import $W/tile64b.ncu-rep --page source --csv --print-source sass > $W/tile64b-source.csv 2>&1
grep -E "Grid Size|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|DRAM Throughput" $W/tile64b-details.txt | head -12
wait_for_model
for streams in 64 32; do for r in 1 2; do for b in 1 0; do
  el "engine bench $streams streams, bulk=$b"
  HOSTLM_CUDA_TILE_BULK=$b HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel $streams -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-250
done; done; done
el "tg128 9B"
timeout 40 $B/bin/hostlm bench $M --backend cuda -p 512 -n 128 -r 3 2>&1 | grep -E "^\| qwen" | cut -c1-200
cd $W && tar czf $OUT/ncu.tgz tile64b-details.txt tile64b-source.csv tile64b.ncu-rep
el done
