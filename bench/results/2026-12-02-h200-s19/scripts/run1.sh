#!/usr/bin/env bash
# Session 19, call 1: the staged uploads as a small kernel reading the pinned memory
# (HOSTLM_CUDA_STAGING_COPY=kernel) against copy-engine nodes (memcpy, the default).
# The whole CUDA suite with the kernel form; one torch-profiler trace of 9B decode steps each
# way (is the late kv_store after the page-table upload gone?); tg128 on the 9B and 0.8B
# Q4_K_M shapes alternating the two; the engine bench at 1/32/64 streams each way.
# Also starts, in the background for call 2: llama.cpp's build outside the repository
# (.devcheck/start-llama.sh, not committed) and the 0.8B Q4_K_M, 9B Q8_0 and 9B BF16 files.
W=/tmp/w19; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
bash .devcheck/start-llama.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
  setsid nohup bash -c "python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo bf16 rc \$? >> $W/gb.log" < /dev/null > /dev/null 2>&1 & ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
$B/bin/hostlm --version
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "full CUDA suite, HOSTLM_CUDA_STAGING_COPY=kernel"
HOSTLM_CUDA_STAGING_COPY=kernel timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests-kernel.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests-kernel.txt | head -24
wait_for_model
el "traces"
for copy in kernel memcpy; do
  HOSTLM_CUDA_STAGING_COPY=$copy timeout 40 python3 tools/device/decode_trace_torch.py $M $W/t-$copy.json 32 > $W/t-$copy.log 2>&1 || tail -3 $W/t-$copy.log
  python3 tools/device/decode_timeline.py $W/t-$copy.json --steps 12 > $OUT/timeline-$copy.txt 2>&1
  echo "$copy: $(sed -n 2p $OUT/timeline-$copy.txt)"
  grep -A3 "handovers" $OUT/timeline-$copy.txt | tail -3
done
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err)"
}
el "tg128, 9B Q4_K_M"
for round in 1 2 3; do
  tg $M 9b-memcpy-r$round HOSTLM_CUDA_STAGING_COPY=memcpy
  tg $M 9b-kernel-r$round HOSTLM_CUDA_STAGING_COPY=kernel
done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B Q4_K_M"
for round in 1 2 3; do
  tg $W/08b-q4km.gguf 08b-memcpy-r$round HOSTLM_CUDA_STAGING_COPY=memcpy
  tg $W/08b-q4km.gguf 08b-kernel-r$round HOSTLM_CUDA_STAGING_COPY=kernel
done
el "engine bench, 1/32/64 streams, memcpy then kernel"
for copy in memcpy kernel; do
  HOSTLM_CUDA_STAGING_COPY=$copy HOSTLM_CUDA_GRAPH_STATS=1 timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | sed "s/^/$copy /"
done
el "background work"
tail -1 $W/gq8.log; tail -1 $W/gb.log; ls -la $W/*.gguf; tail -2 /tmp/llama17/build.log 2>/dev/null | cut -c1-160
el done
