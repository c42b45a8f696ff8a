#!/usr/bin/env bash
# Session 20, call 1: the norm kernel with eight consecutive values a thread (quantized straight
# from registers, no shared-memory pass) and the SwiGLU fused into the gate/up product's
# epilogue (HOSTLM_CUDA_FUSE_GLU=0 turns the fusion off). "base" is main 8152231's CUDA library
# (built with this session's ops.h, whose new virtual has a default), carried as
# .devlibs/base-cuda.tar.xz and chosen with HOSTLM_CUDA_LIBRARY.
# The whole CUDA suite; then tg128 on the 9B Q4_K_M, 0.8B Q4_K_M, 9B Q8_0 and 9B BF16 shapes,
# rounds alternating base / new / new without the fusion, with the graph statistics (GPU time
# per replayed step; the new library also reports the logits download and the GPU's wait for
# the next step); one torch-profiler trace of 9B decode steps with the new library.
# Also starts llama.cpp's build outside the repository (.devcheck/start-llama.sh, not
# committed) in the background for call 2.
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
W=/tmp/w20; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
bash .devcheck/start-llama.sh
mkdir -p $W/base && tar xJf .devlibs/base-cuda.tar.xz -C $W/base
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
BASE=HOSTLM_CUDA_LIBRARY=$W/base/libhostlm_cuda.so
el "full CUDA suite"
timeout 230 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
grep -A3 "CudaSwiglu" $OUT/cuda-tests.txt | head -8
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us.*apart" $W/$l.err) | $(grep -o "came back in .*" $W/$l.err)"
}
wait_for_model
el "tg128, 9B Q4_K_M: base / new / new without the SwiGLU fusion"
for round in 1 2 3; do
  tg $M 9b-base-r$round $BASE
  tg $M 9b-new-r$round
  tg $M 9b-noglu-r$round HOSTLM_CUDA_FUSE_GLU=0
done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done; tail -1 $W/g08.log
el "tg128, 0.8B Q4_K_M"
for round in 1 2 3; do
  tg $W/08b-q4km.gguf 08b-base-r$round $BASE
  tg $W/08b-q4km.gguf 08b-new-r$round
  tg $W/08b-q4km.gguf 08b-noglu-r$round HOSTLM_CUDA_FUSE_GLU=0
done
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done; tail -1 $W/gq8.log
el "tg128, 9B Q8_0"
for round in 1 2; do
  tg $W/9b-q80.gguf q8-base-r$round $BASE
  tg $W/9b-q80.gguf q8-new-r$round
done
el "trace, 9B Q4_K_M, new"
timeout 40 python3 tools/device/decode_trace_torch.py $M $W/t.json 32 > $W/t.log 2>&1 || tail -3 $W/t.log
python3 tools/device/decode_timeline.py $W/t.json --steps 12 > $OUT/timeline9.txt 2>&1
head -22 $OUT/timeline9.txt
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; done; tail -1 $W/gb.log
el "tg128, 9B BF16"
tg $W/9b-bf16.gguf bf-base-r1 $BASE
tg $W/9b-bf16.gguf bf-new-r1
el "llama build: $(tail -1 /tmp/llama17/llama-build.log 2>/dev/null)"
