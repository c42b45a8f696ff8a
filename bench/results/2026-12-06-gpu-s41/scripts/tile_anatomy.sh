#!/usr/bin/env bash
# Sourced at the end of a call (env.sh already sourced): what limits the 7-64-token Q4_K tile
# product, the 64-stream decode step's largest cost. Nsight Compute on one 12288 x 4096 product
# at 64 tokens (warp states, scheduler, instruction mix, pipes) and the SASS of the kernels.
export PATH=$PATH:/usr/local/cuda/bin
el "tile product anatomy: ncu, 12288 x 4096 at 64 tokens"
HOSTLM_BENCH_TOKENS=64 HOSTLM_BENCH_SHAPES=12288x4096 timeout 150 ncu --kernel-name regex:tile_pipelined \
  --launch-skip 5 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  --section InstructionStats --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats \
  $B/bin/bench_cuda_quant q4_K > $OUT/ncu-tile-q4k-64.txt 2>&1
echo "ncu rc $?"; grep -E "Duration|Executed Ipc A|Issue Slots Busy|No Eligible|Active Warps Per|Eligible Warps|Stall|Warp Cycles Per Issued|Executed Instructions  |Registers Per|Achieved Occ|Block Size|Grid Size|Dynamic Shared" $OUT/ncu-tile-q4k-64.txt | head -40
el "SASS of the tile kernels"
timeout 60 cuobjdump -sass $B/lib/libhostlm_cuda.so 2>/dev/null | awk '/Function : .*tile_pipelined/{p=1} /Function : /&&!/tile_pipelined/{p=0} p' | gzip > $OUT/sass-tile-pipelined.txt.gz
ls -la $OUT/sass-tile-pipelined.txt.gz
