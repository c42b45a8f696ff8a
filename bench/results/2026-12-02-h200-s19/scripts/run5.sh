#!/usr/bin/env bash
# Session 19, call 5: early loads extended by what the op before is known not to have
# written (cuda_backend.cpp LastWrites): the residual x of add_rms_norm after a product, the
# gate z of the gated norm after the delta rule, the delta-rule state after a product or
# convolution; and the kernel uploads (staging) made the default. The whole CUDA suite, then
# tg128 alternating "off" (HOSTLM_CUDA_EARLY_LOADS=0 HOSTLM_CUDA_STAGING_COPY=memcpy: this
# session's starting point) and "on" (defaults) on the 9B Q4_K_M, 0.8B Q4_K_M, 9B Q8_0 and
# 9B BF16 shapes; the engine bench off and on; one decode trace with the defaults.
W=/tmp/w19e; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo "gb rc $?" >> $W/gb.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "new tests"
timeout 60 $B/bin/test_cuda_backend --gtest_filter='*RightAfter*' 2>&1 | grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|worst" | head
el "full CUDA suite"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
wait_for_model
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err)"
}
OFF="HOSTLM_CUDA_EARLY_LOADS=0 HOSTLM_CUDA_STAGING_COPY=memcpy"
ab() {  # file label rounds
  for round in $(seq $3); do tg $1 $2-off-r$round $OFF; tg $1 $2-on-r$round HOSTLM_X=1; done
}
el "tg128, 9B Q4_K_M"; ab $M 9b 3
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "tg128, 0.8B Q4_K_M"; ab $W/08b-q4km.gguf 08b 3
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done
el "tg128, 9B Q8_0"; ab $W/9b-q80.gguf q80 2
el "engine bench, 1/32/64 streams, off then on"
for v in off on; do
  if [ $v = off ]; then e=$OFF; else e="HOSTLM_X=1"; fi
  env $e HOSTLM_CUDA_GRAPH_STATS=1 timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | sed "s/^/$v /"
done
el "trace, defaults"
timeout 40 python3 tools/device/decode_trace_torch.py $M $W/t.json 32 > $W/t.log 2>&1 || tail -3 $W/t.log
python3 tools/device/decode_timeline.py $W/t.json --steps 12 > $OUT/timeline9.txt 2>&1; head -3 $OUT/timeline9.txt
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; done
el "tg128, 9B BF16"; ab $W/9b-bf16.gguf bf16 2
el done
