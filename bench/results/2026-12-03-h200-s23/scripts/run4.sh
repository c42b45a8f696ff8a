#!/usr/bin/env bash
# Session 23, call 4 (right after call 3, on the same machine): (1) the tile product with two
# token warps at 64 tokens only (one at 32), against the old form (128-row blocks, one token
# warp), engine bench at 64 and 32 streams, alternating; (2) the 9B Q4_K_M shape's full
# 262,144-token window: hostlm (its default steps for a long window: 512) through
# tools/device/run_long_context.sh, and llama.cpp's llama-bench -p 262144 (built outside the
# repository in call 3) with its GPU memory sampled the same way (nvidia-smi every 200 ms).
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w23c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
M=$W/9b-q4km.gguf; ls -l $M
for streams in 64 32; do for r in 1 2; do for v in "0 0" "128 1"; do set -- $v
  el "engine bench $streams streams, rows $1 (0: chosen), token warps $2 (0: chosen)"
  HOSTLM_CUDA_TILE_ROWS=$1 HOSTLM_CUDA_TILE_TOKEN_WARPS=$2 HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel $streams -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-250
done; done; done
el "waiting for llama.cpp's build"
for i in $(seq 1 130); do grep -q "llama rc" /tmp/llama17/llama-build.log 2>/dev/null && break; sleep 3; done
tail -1 /tmp/llama17/llama-build.log; tail -1 /tmp/llama17/build.log
mkdir -p /tmp/lc && ln -sf $M /tmp/lc/9b-q4_k_m.gguf
el "hostlm, 262,112-token prompt"
PYTHONPATH=$W/gguf-py SIZE=9b WORK=/tmp/lc STEPS="hostlm" RESULTS=$OUT/lc9 timeout 200 tools/device/run_long_context.sh build-h200 2>&1 | grep -E "peak|prefill|t/s|FAILED" | head -12
el "llama.cpp, pp262144"
rm -f $W/lmem.txt
( while true; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits >> $W/lmem.txt; sleep 0.2; done ) & P=$!
timeout 200 /tmp/llama17/llsrc/build/bin/llama-bench -m $M -ngl 99 -fa 1 -p 262144 -n 0 -r 1 --no-warmup > $W/llama-pp.txt 2> $W/llama-pp.err; echo "llama-bench rc $?"
kill $P
echo "llama.cpp peak GPU memory $(sort -n $W/lmem.txt | tail -1) MiB (baseline $(head -1 $W/lmem.txt) MiB)"
cat $W/llama-pp.txt | tail -4; grep -E "buffer size|KV buffer|compute buffer" $W/llama-pp.err | head -10
cp $W/llama-pp.txt $W/llama-pp.err $W/lmem.txt $OUT/lc9/ 2>/dev/null
cd $OUT && tar czf lc9.tgz lc9 && rm -rf lc9
el done
