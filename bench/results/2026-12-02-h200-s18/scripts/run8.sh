#!/usr/bin/env bash
# Session 18, call 8: call 5's trace found kv_store of the first attention layer starting
# ~100-138 us after the H2D copy before it, in most steps; call 7's (HOSTLM_CUDA_GRAPH_STATS=1)
# did not. Two traces each way, alternating, counting the steps with a gap of 10 us or more
# inside them.
W=/tmp/w18h; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
wait_for_model
for round in 1 2; do
  for stats in 0 1; do
    HOSTLM_CUDA_GRAPH_STATS=$stats timeout 100 python3 tools/device/decode_trace_torch.py $M $W/t$round$stats.json 48 > /dev/null 2>&1
    echo "round $round stats $stats: $(python3 tools/device/decode_timeline.py $W/t$round$stats.json --steps 16 | sed -n 2p)"
    python3 tools/device/decode_timeline.py $W/t$round$stats.json --steps 16 | grep -A1 "handovers" | tail -1
  done
done
