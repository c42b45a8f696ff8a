#!/usr/bin/env bash
# Session 23, call 4 (right after call 3, on the same machine): the 9B Q4_K_M shape's full
# 262,144-token window, hostlm (its default steps for a long window: 512) beside llama.cpp's
# llama-bench in the same run, peak GPU memory sampled every 200 ms for both
# (tools/device/run_long_context.sh). llama.cpp was built outside the repository in call 3.
tar xJf .devlibs/libs.tar.xz -C .devlibs
export LD_LIBRARY_PATH=$PWD/.devlibs:$PWD/build-h200/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
if ldd build-h200/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
echo "{\"source_dir\": \"$PWD\"}" > build-h200/hostlm-build-tree.json
for i in $(seq 1 100); do grep -q "llama rc" /tmp/llama17/llama-build.log 2>/dev/null && break; sleep 3; done
tail -1 /tmp/llama17/llama-build.log; ls /tmp/llama17/llsrc/build/bin/ | head
mkdir -p /tmp/lc && ln -sf /tmp/w23c/9b-q4km.gguf /tmp/lc/9b-q4_k_m.gguf && ls -lL /tmp/lc/
export PYTHONPATH=/tmp/w23c/gguf-py
SIZE=9b WORK=/tmp/lc STEPS="hostlm llama" LLAMA_BIN=/tmp/llama17/llsrc/build/bin RESULTS=$OUT/lc9 \
  timeout 560 tools/device/run_long_context.sh build-h200 2>&1 | tail -40
cd $OUT && tar czf lc9.tgz lc9 && rm -rf lc9 && ls -la $OUT
