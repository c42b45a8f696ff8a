#!/usr/bin/env bash
# Session 18, call 3: what two prefill buffers cost and give. The 27B Q4_K_M shape held 16,435
# MiB at depth 0 in call 2 against llama.cpp's 16,397 (session 16). Two candidates, switched
# by environment: the cuBLAS workspace (32 MiB, HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB) and the
# prefill weight tile (2^25 weights = 64 MiB, HOSTLM_CUDA_PREFILL_TILE_MI in 2^20 weights).
# pp512 + tg128 of the 27B and 9B Q4_K_M shapes with each setting, two rounds alternating,
# printing t/s and hostlm's own GPU memory peak.
W=/tmp/w18c; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/g27.log 2>&1; echo "g27 rc $?" >> $W/g27.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
pp() {  # file label [env...]
  local f=$1 l=$2; shift 2
  env "$@" timeout 90 $B/bin/hostlm bench $f --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/$l.json 2>$OUT/$l.err
  echo "$l $(python3 -c "
import json,sys
d=json.load(open(sys.argv[1]))
print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d), 'peak', max(r.get('device_memory_used_peak', 0) for r in d) // (1 << 20), 'MiB')" $OUT/$l.json 2>&1 | tail -1)"
}
wait_for_model
while ! grep -q "g27 rc" $W/g27.log 2>/dev/null; do sleep 2; done; tail -1 $W/g27.log
for f in 27b-q4km 9b-q4km; do
  el "$f"
  for round in 1 2; do
    pp $W/$f.gguf $f-default-r$round
    pp $W/$f.gguf $f-ws4-r$round HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB=4
    pp $W/$f.gguf $f-tile16-r$round HOSTLM_CUDA_PREFILL_TILE_MI=16
    pp $W/$f.gguf $f-both-r$round HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB=4 HOSTLM_CUDA_PREFILL_TILE_MI=16
  done
done
el done
