#!/usr/bin/env bash
# Session 19, call 2, on the machine call 1 left warm (files in /tmp/w19, llama.cpp building in
# /tmp/llama17 outside the repository): the same-run comparison beside llama-bench, depth 0 on
# four files (9B BF16, Q8_0, Q4_K_M; 0.8B Q4_K_M), then the 9B Q4_K_M at depth 65536.
# STAGING (memcpy or kernel) is HOSTLM_CUDA_STAGING_COPY for hostlm, chosen from call 1.
W=/tmp/w19; t0=$(date +%s); R=$PWD; B=$R/build-h200; L=/tmp/llama17
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
export HOSTLM_CUDA_STAGING_COPY=${STAGING:-memcpy}
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
echo "staging: $HOSTLM_CUDA_STAGING_COPY"
while ! grep -q "bf16 rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 200 ] && break; done
ls -la $W/*.gguf; tail -1 $W/gb.log
el "waiting for llama.cpp"
while ! grep -q "llama rc" $L/llama-build.log 2>/dev/null; do sleep 3; [ $(( $(date +%s) - t0 )) -gt 300 ] && break; done
tail -1 $L/llama-build.log; tail -1 $L/build.log | cut -c1-160
el "compare, depth 0"
DEPTHS="" REPS=2 STEP_TIMEOUT=100 LLAMA_BIN=$L/llsrc/build/bin RESULTS=$OUT/cmp timeout 330 bash tools/device/run_bench_compare.sh $B $W/9b-bf16.gguf $W/9b-q80.gguf $W/9b-q4km.gguf $W/08b-q4km.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
cat $OUT/cmp/summary.md 2>/dev/null | head -40
el done
