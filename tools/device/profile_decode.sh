#!/usr/bin/env bash
# Where a decode step's GPU time goes, kernel by kernel (issue 5): Nsight Compute times COUNT
# kernels of `hostlm bench MODEL -p 16 -n NGEN` after skipping SKIP launches (the load, the
# prompt and the first steps), with each kernel's DRAM traffic, and
# tools/device/profile_summary.py groups them by kernel: launches, total and mean time, share
# of the step, and GB/s. One 9B decode step is about 400 launches, so the defaults cover two
# steps well after the graphs are recorded. ncu serialises kernels, so launch gaps and
# programmatic-launch overlap do not show; the sum is the kernels' own time, the step minus
# launch overhead.
#
#   tools/device/profile_decode.sh BUILD_DIR MODEL.gguf
#
# Environment, all optional: NCU (default: ncu on PATH, else /opt/nvidia/nsight-compute/*/ncu),
# SKIP=6000 COUNT=800 NGEN=48, PARALLEL=N (profile an N-stream serving step instead:
# `hostlm bench --parallel N -p 128 -n NGEN`), RESULTS=DIR (default $OUT, else
# /tmp/hostlm-profile-decode): ncu.csv and summary.txt.
set -Eeuo pipefail
trap 'echo "profile_decode.sh: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR
[ $# -eq 2 ] || { echo "usage: profile_decode.sh BUILD_DIR MODEL.gguf" >&2; exit 2; }
build=$(cd "$1" && pwd)
model=$(realpath "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
ncu=${NCU:-$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1 || true)}
[ -x "$ncu" ] || { echo "no ncu found (set NCU=)" >&2; exit 2; }
results=${RESULTS:-${OUT:-/tmp/hostlm-profile-decode}}
mkdir -p "$results"
args=(bench "$model" --backend cuda -p 16 -n "${NGEN:-48}" -r 1)
[ -n "${PARALLEL:-}" ] && args=(bench "$model" --backend cuda --parallel "$PARALLEL" -p 128 -n "${NGEN:-48}")
export LD_LIBRARY_PATH="$build/lib:${LD_LIBRARY_PATH:-}"
"$ncu" --clock-control none --launch-skip "${SKIP:-6000}" --launch-count "${COUNT:-800}" \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum \
  --csv --page raw "$build/bin/hostlm" "${args[@]}" > "$results/ncu.csv" 2> "$results/ncu.log"
python3 "$root/tools/device/profile_summary.py" "$results/ncu.csv" | tee "$results/summary.txt"
