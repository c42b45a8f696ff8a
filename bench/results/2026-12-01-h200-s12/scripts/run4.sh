#!/usr/bin/env bash
# Session 12, call 4: call 3 found the fused norm and add slower (tg128 351/342 against
# 387/373). Which part: the add alone, the norm alone without the output head (at most 65,536
# rows per product), both, and both with the head too, against neither; tg128 twice each.
W=/tmp/w12d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
wait_for_model
tg() { el "tg128 $*"; env "$@" timeout 40 $B/bin/hostlm bench $M --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|rror" | tee -a $OUT/tg-ab.txt; }
for i in 1 2; do
  tg HOSTLM_CUDA_FUSE_NORM=0 HOSTLM_CUDA_FUSE_ADD=0
  tg HOSTLM_CUDA_FUSE_NORM=0 HOSTLM_CUDA_FUSE_ADD=1
  tg HOSTLM_CUDA_FUSE_NORM=1 HOSTLM_CUDA_FUSE_ADD=0
  tg HOSTLM_CUDA_FUSE_NORM=1 HOSTLM_CUDA_FUSE_ADD=1
  tg HOSTLM_CUDA_FUSE_NORM=1 HOSTLM_CUDA_FUSE_ADD=1 HOSTLM_CUDA_FUSE_NORM_ROWS=1000000000
done
el "ncu"
timeout 100 $NCU --clock-control none --kernel-name regex:gemv_one_token --launch-skip 3000 --launch-count 8 \
  --section SpeedOfLight --section SchedulerStats --section LaunchStats \
  $B/bin/hostlm bench $M --backend cuda -p 0 -n 32 -r 1 > $OUT/ncu.txt 2>&1; echo "ncu rc $?"
grep -E "gemv_one_token|Duration|DRAM Throughput|Issued Warp|No Eligible|Dynamic Shared" $OUT/ncu.txt | head -60
el done
