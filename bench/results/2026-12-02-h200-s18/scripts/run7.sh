W=/tmp/w18e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
wait_for_model
HOSTLM_CUDA_GRAPH_STATS=1 timeout 150 python3 tools/device/decode_trace_torch.py $M $W/tr9b.json 48 2>&1 | grep -E "graphs|generated"
python3 bench/results/2026-12-02-h200-s18/scripts/events.py $W/tr9b.json 2>&1 | grep -E "gap +[0-9]{2,}|events in" | head
HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda -p 0 -n 128 -r 2 2>&1 | grep -E "tg128|graphs"
HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 1 -p 512 -n 128 2>&1 | grep -E "qwen|graphs"
