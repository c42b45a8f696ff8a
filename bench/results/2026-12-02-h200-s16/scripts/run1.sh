#!/usr/bin/env bash
# Session 16, call 1 (branch wip/tile-q4k-wgmma built for sm_90a): first run of the wgmma
# form of the Q4_K tile product. The quant product tests with it off and on, then (if they
# pass) serving at 32 and 64 streams on the 9B Q4_K_M shape, alternating off/on, with the
# graph timing (GPU time per replayed decode step).
W=/tmp/w16a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
for wg in 0 1; do
  el "quant tests, HOSTLM_CUDA_TILE_WGMMA=$wg"
  HOSTLM_CUDA_TILE_WGMMA=$wg timeout 200 $B/bin/test_cuda_backend --gtest_filter='*CudaQuant*' > $OUT/test-wg$wg.txt 2>&1
  echo "rc $?"; grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|worst" $OUT/test-wg$wg.txt | head -30
done
ok=$(grep -c "^\[  PASSED" $OUT/test-wg1.txt)
wait_for_model
if [ "$ok" = 1 ]; then
  for round in 1 2; do
    for wg in 0 1; do
      el "serving 32,64 streams, round $round, WGMMA=$wg"
      HOSTLM_CUDA_TILE_WGMMA=$wg HOSTLM_CUDA_GRAPH_STATS=1 timeout 100 $B/bin/hostlm bench $M --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | tee -a $OUT/serving.txt
    done
  done
  el "ncu tile, WGMMA=1"
  HOSTLM_CUDA_TILE_WGMMA=1 timeout 100 $NCU --clock-control none -k regex:"tile_q4k" --launch-skip 600 --launch-count 6 --section SpeedOfLight --section SchedulerStats --section WarpStateStats $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 128 -n 24 > $OUT/ncu-tile.txt 2>&1; echo "ncu rc $?"
  grep -E "tile_q4k_kernel|Duration|Compute \(SM\) Throughput|Memory Throughput|Issued Warp|No Eligible|Stall" $OUT/ncu-tile.txt | head -60
fi
el done
