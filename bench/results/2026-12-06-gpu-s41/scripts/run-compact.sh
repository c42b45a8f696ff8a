#!/usr/bin/env bash
# Session 41, the call that fits what device time was left after the refused starts (about
# 450 s), on whichever card comes: k-slice warps again (kslices.sh), the 9B's 64 streams with
# 8,192-token engine steps and GPU memory peaks, then the tile product's anatomy (Nsight
# Compute, SASS). No llama.cpp (its build alone takes about 300 s).
source bench/results/2026-12-06-gpu-s41/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
peak() {
  local label=$1; shift
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 100 > $W/mem.txt 2>/dev/null &
  local smi=$!
  "$@"
  kill $smi 2>/dev/null; wait $smi 2>/dev/null
  echo "$label: highest GPU memory sample $(sort -n $W/mem.txt | tail -1) MiB"
}
{
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
wait_file 9b-q4km 240
source bench/results/2026-12-06-gpu-s41/scripts/kslices.sh
for b in 2048 8192; do
  el "9B 64 streams, -b $b"
  peak "b$b" bash -c "timeout 45 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 -b $b 2>&1 | grep -E '^\\| qwen|rror' | tr -s ' ' | cut -c1-160"
done
source bench/results/2026-12-06-gpu-s41/scripts/tile_anatomy.sh
el done
} 2>&1 | tee $OUT/run-compact.txt | cut -c1-250
