#!/usr/bin/env bash
# For session 39's first GPU call (written in session 38, not yet run): branch
# wip/tile-prmt-operand (10dad55) against main. The branch passes PRMT's exponent bytes to the
# pipelined tile kernels as a kernel parameter, which cuts the main loop's SASS from 637 to 574
# instructions a warp and chunk (Q4_K, 64 tokens; cuobjdump from the nvidia-cuda-cuobjdump
# wheel); results are meant to be identical bit for bit.
# Before the call, build the branch beside main's build and carry both:
#   git worktree add /tmp/wt-prmt wip/tile-prmt-operand
#   cmake -S /tmp/wt-prmt -B build-h200-b -G Ninja <build-h200's CMake options> && ninja -C build-h200-b
#   tar cJf .devcarry/h200-b.tar.xz build-h200-b/bin/{hostlm,test_cuda_backend,bench_cuda_quant} build-h200-b/lib/*.so build-h200-b/manifests
# (and .devcarry/h200.tar.xz from main as usual).
source bench/results/2026-12-05-h200-s37/scripts/env.sh
tar xJf .devcarry/h200-b.tar.xz; B2=$R/build-h200-b
echo "{\"source_dir\": \"$R\"}" > $B2/hostlm-build-tree.json
# with_build DIR CMD...: CMD with DIR's libraries, backends and plugins.
with_build() { local b=$1; shift; env HOSTLM_BUILD_DIR=$b HOSTLM_LIBRARY=$b/lib/libhostlm.so LD_LIBRARY_PATH=$b/lib:$LD_LIBRARY_PATH "$@"; }
make_file 9b-q4km 9b Q4_K_M
{
el "cuda tests, branch"
with_build $B2 timeout 300 $B2/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests-b.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests-b.txt | head -20
for t in 64 32 16; do
  for b in $B $B2; do
    el "products alone, T=$t, $b"
    with_build $b HOSTLM_BENCH_TOKENS=$t timeout 60 $b/bin/bench_cuda_quant q4_K q6_K 2>&1 | grep -E "T="
  done
done
wait_file 9b-q4km 300
for i in 1 2; do
  for b in $B $B2; do
    el "9B 32, 64 streams, $b"
    with_build $b timeout 60 $b/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|rror" | tr -s ' ' | cut -c1-160
  done
done
el done
} 2>&1 | tee $OUT/next-run1.txt | cut -c1-250
