#!/usr/bin/env bash
# Session 17, call 6: Nsight Compute's launch, occupancy and warp-state sections for one
# folded gate/up product of the 9B Q4_K_M shape and for the same product apart, to see where
# the fold's extra ~20 us per launch goes (call 5: 41 us against 19).
W=/tmp/w17f; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
wait_for_model
for fold in 1 0; do
  el "ncu, HOSTLM_CUDA_FOLD_NORM=$fold"
  flag=$fold
  HOSTLM_CUDA_FOLD_NORM=$fold timeout 150 $NCU --clock-control none --kernel-name-base demangled \
    -k "regex:gemv_one_token_kernel<.*K45.*, .bool.1, .bool.$flag>" --launch-skip 40 --launch-count 4 \
    --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight \
    $B/bin/hostlm bench $M --backend cuda -p 16 -n 8 -r 1 > $OUT/ncu-fold$fold.txt 2>&1; echo "rc $?"
  grep -E "gemv_one_token|Duration|Grid Size|Registers|Shared Memory Config|Dynamic Shared|Achieved Occupancy|Theoretical Occupancy|Block Limit|Warp Cycles Per Issued|Stall|No Eligible|Issued Warp|Memory Throughput|DRAM Through|One or More|L1/TEX Hit" $OUT/ncu-fold$fold.txt | head -120
done
el done
