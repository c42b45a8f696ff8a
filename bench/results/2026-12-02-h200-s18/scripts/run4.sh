#!/usr/bin/env bash
# Session 18, call 4: the prefill activation scratch sized to the model's batch
# (Backend::expect_batch_tokens) and a 4 MiB cuBLAS workspace by default. The new test and the
# whole CUDA suite; then pp512 + tg128 of the 27B and 9B Q4_K_M shapes with GPU memory peaks,
# the new default against the old 32 MiB workspace, two rounds alternating.
W=/tmp/w18d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/g27.log 2>&1; echo "g27 rc $?" >> $W/g27.log ) &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
el "new tests"
timeout 100 $B/bin/test_cuda_backend --gtest_filter='*PrefillBeyond*:*Convolved*:*PrefillTiles*' > $OUT/test-new.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|Failure|Expected|Which is|error" $OUT/test-new.txt | head -20
el "full CUDA suite"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -24
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
    pp $W/$f.gguf $f-new-r$round
    pp $W/$f.gguf $f-ws32-r$round HOSTLM_CUDA_CUBLAS_WORKSPACE_MIB=32
  done
done
el done
