#!/usr/bin/env bash
# Session 31, call 5: the tile expansion of prefill (about 20% of a q4_K product at 2,048
# tokens). Nsight Compute's speed-of-light on the expansion kernel; an experimental variant
# (HOSTLM_CUDA_DEQUANT_LOOP=N: N CTAs per SM loop over the spans, requesting the next span's
# pieces before storing the current one) against main's, alone and in pp512 / 64 streams.
source bench/results/2026-12-04-h200-s31/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
{
$B/bin/hostlm --version | head -1
el "products at 2048 / 512 tokens"
for l in 0 2 4 0 2 4; do echo "-- loop $l"; HOSTLM_CUDA_DEQUANT_LOOP=$l HOSTLM_BENCH_TOKENS=2048,512 timeout 60 $B/bin/bench_cuda_quant q4_K q6_K; done
el "quant and prefill tests, loop 4"
HOSTLM_CUDA_DEQUANT_LOOP=4 timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Quant*:*Prefill*:*Logits*' > $OUT/tests-loop4.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/tests-loop4.txt | head
el "ncu"
for l in 0 4; do echo "-- loop $l"
  HOSTLM_CUDA_DEQUANT_LOOP=$l HOSTLM_BENCH_TOKENS=2048 timeout 60 $NCU --clock-control none -k regex:dequant_f16 --launch-skip 4 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy $B/bin/bench_cuda_quant q4_K > $OUT/ncu-loop$l.txt 2>&1; echo "ncu rc $?"
  grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Mem Busy|Max Bandwidth" $OUT/ncu-loop$l.txt | head -12
done
wait_file 9b-q4km 60
el "pp512 and 64 streams, loop 0 / 4"
for l in 0 4 0 4; do echo "-- loop $l"
  HOSTLM_CUDA_DEQUANT_LOOP=$l timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda -p 512 -n 0 -r 3 -o json 2>/dev/null | python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print(r['test'], round(r['avg_ts'],1))"
  HOSTLM_CUDA_DEQUANT_LOOP=$l timeout 60 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; done
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-250
