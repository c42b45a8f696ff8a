#!/usr/bin/env bash
# Session 11, call 7 (warm machine of call 6, its model file): serving A/B, since call 6's
# serving figures were below session 10's: default, fused quantization off, one-token GEMV off.
# (device_env.sh is not sourced: it would write the model file again.)
R=$PWD; B=$R/build-h200
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
M=/tmp/w11f/9b-q4km.gguf; ls -la $M | cut -c1-80
sv() { el "serving $*"; env "$@" timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"; }
sv X=default
sv HOSTLM_CUDA_FUSE_QUANTIZE=0
sv HOSTLM_CUDA_FUSE_QUANTIZE=0 HOSTLM_CUDA_GEMV_ONE_TOKEN=0
sv X=default
el done
