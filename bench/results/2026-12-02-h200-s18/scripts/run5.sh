#!/usr/bin/env bash
# Session 18, call 5: where a decode step's GPU time goes, kernel by kernel and handover by
# handover. No Nsight Systems on this machine, so tools/device/decode_trace_torch.py loads the
# model through the C API inside PyTorch's profiler (CUPTI records the graph-launched kernels)
# and tools/device/decode_timeline.py sums the steady steps. 9B and 0.8B Q4_K_M shapes,
# greedy, one stream.
W=/tmp/w18e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
wait_for_model
el "9B trace"
timeout 150 python3 tools/device/decode_trace_torch.py $M $W/tr9.json 48 > $OUT/trace9.log 2>&1; echo "trace rc $?"; tail -3 $OUT/trace9.log
python3 tools/device/decode_timeline.py $W/tr9.json --steps 16 > $OUT/timeline9.txt 2>&1; cat $OUT/timeline9.txt | head -70
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "0.8B trace"
timeout 100 python3 tools/device/decode_trace_torch.py $W/08b-q4km.gguf $W/tr08.json 48 > $OUT/trace08.log 2>&1; echo "trace rc $?"; tail -3 $OUT/trace08.log
python3 tools/device/decode_timeline.py $W/tr08.json --steps 16 > $OUT/timeline08.txt 2>&1; cat $OUT/timeline08.txt | head -45
el done
