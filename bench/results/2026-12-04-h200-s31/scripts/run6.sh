#!/usr/bin/env bash
# Session 31, call 6 (the last of the device budget): Nsight Compute on two prefill kernels for
# the next session: conv1d_silu (161 us a 2,048-row call, ~4x its bytes) and the prefill
# gated delta rule (400 us a call, 11% of the 64-stream prefill). 8 prompts of 512 tokens:
# two 2,048-token steps.
source bench/results/2026-12-04-h200-s31/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats"
{
wait_file 9b-q4km 60
for k in conv1d_silu_kernel gated_delta_rule_kernel; do el "ncu $k"
  timeout 100 $NCU --clock-control none -k regex:$k --launch-skip 24 --launch-count 1 $S $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 8 -p 512 -n 1 > $OUT/ncu-$k.txt 2>&1; echo "ncu rc $?"
  grep -E "Duration|Grid Size|Block Size|Registers Per|DRAM Throughput|L2 Cache Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occupancy|Block Limit Reg|Warp Cycles Per Issued|Issued Warp|No Eligible|Stall" $OUT/ncu-$k.txt | head -24
done
el done
} 2>&1 | tee $OUT/call6.txt | cut -c1-250
