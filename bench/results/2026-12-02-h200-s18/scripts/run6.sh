W=/tmp/w18e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
wait_for_model
[ -f $W/tr9.json ] || timeout 150 python3 tools/device/decode_trace_torch.py $M $W/tr9.json 48 > $OUT/trace9.log 2>&1
python3 bench/results/2026-12-02-h200-s18/scripts/events.py $W/tr9.json 2>&1 | head -80
