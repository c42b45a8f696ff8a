#!/usr/bin/env bash
# Session 17, call 4: the fold's test again (its first version shared norm-weight addresses
# between cases, so the backends read stale weights), and Nsight Compute's kernel times of
# one 9B Q4_K_M decode step with the fold on and off (tools/device/profile_decode.sh), to see
# why call 3's step was 727 us longer with it.
W=/tmp/w17d; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
el "folded-norm test"
timeout 100 $B/bin/test_cuda_backend --gtest_filter='CudaFoldedNorm*:*ProducedQuantized*' > $OUT/test-fold.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED) |FAILED  \]|differ|Which is|cols " $OUT/test-fold.txt | head -40
wait_for_model
for fold in 1 0; do
  el "profile, HOSTLM_CUDA_FOLD_NORM=$fold"
  HOSTLM_CUDA_FOLD_NORM=$fold SKIP=3000 COUNT=420 RESULTS=$OUT/prof$fold timeout 200 bash tools/device/profile_decode.sh $B $M > /dev/null 2>&1; echo "rc $?"
  head -20 $OUT/prof$fold/summary.txt
done
el done
