#!/usr/bin/env bash
# Session 19, call 4: loads that cannot depend on the kernel before, issued before the
# programmatic wait: the norms' weights (norm_kernel, gated_rms_norm_kernel, qk_norm_rope's
# weights and first rotation frequency) and the delta rule's recurrent state.
# HOSTLM_CUDA_EARLY_LOADS=0 puts them back after the wait. The whole CUDA suite (early loads
# on), then tg128 on the 9B Q4_K_M, 0.8B Q4_K_M and 9B Q8_0 shapes alternating off / on /
# on with the kernel uploads (HOSTLM_CUDA_STAGING_COPY=kernel); the engine bench off and on.
W=/tmp/w19d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version | head -1
nvidia-smi --query-gpu=name,driver_version,memory.used --format=csv,noheader
el "full CUDA suite"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
wait_for_model
tg() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $f --backend cuda -p 0 -n 128 -r 3 -o json > $W/$l.json 2>$W/$l.err
  echo "$l $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $W/$l.json 2>&1 | tail -1) | $(grep -o "a replay ran [0-9.]* us" $W/$l.err)"
}
abc() {  # file label
  for round in 1 2 3; do
    tg $1 $2-off-r$round HOSTLM_CUDA_EARLY_LOADS=0
    tg $1 $2-on-r$round HOSTLM_CUDA_EARLY_LOADS=1
    tg $1 $2-onk-r$round HOSTLM_CUDA_EARLY_LOADS=1 HOSTLM_CUDA_STAGING_COPY=kernel
  done
}
el "tg128, 9B Q4_K_M"; abc $M 9b
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "tg128, 0.8B Q4_K_M"; abc $W/08b-q4km.gguf 08b
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done
el "tg128, 9B Q8_0"; abc $W/9b-q80.gguf q80
el "engine bench, 1/32/64 streams, off then on"
for e in 0 1; do
  HOSTLM_CUDA_EARLY_LOADS=$e HOSTLM_CUDA_GRAPH_STATS=1 timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | sed "s/^/early=$e /"
done
el done
