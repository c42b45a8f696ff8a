#!/usr/bin/env bash
# Session 18, call 9 (the last ~80 s of device time): uploads as a small kernel that reads the
# pinned staging memory (HOSTLM_CUDA_STAGING_COPY=kernel) instead of copy-engine nodes. The
# CUDA tests that replay decode steps and compare logits, with the kernel form; then one trace
# of 9B decode steps each way.
W=/tmp/w18i; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
HOSTLM_CUDA_STAGING_COPY=kernel timeout 40 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='CudaGraphReplay*:*Logits*:CudaLongContext*' 2>&1 | grep -E "PASSED|FAILED|tests from|Failure" | head -8
el tests
wait_for_model
for copy in kernel memcpy; do
  HOSTLM_CUDA_STAGING_COPY=$copy timeout 25 python3 tools/device/decode_trace_torch.py $M $W/t-$copy.json 32 > /dev/null 2>&1
  echo "$copy: $(python3 tools/device/decode_timeline.py $W/t-$copy.json --steps 12 | sed -n 2p)"
  python3 tools/device/decode_timeline.py $W/t-$copy.json --steps 12 | grep -A2 "handovers" | tail -2
done
el done
