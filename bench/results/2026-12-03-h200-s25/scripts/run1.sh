#!/usr/bin/env bash
# Session 25, call 1: grouped one-token 16-bit products (HOSTLM_CUDA_GEMV16_GROUP=1, the
# default, against 0) on the 9B BF16, with their new test and the whole CUDA suite; where the
# 9B Q8_0 step's time goes (HOSTLM_CUDA_PROFILE) and rows per warp of its one-token product
# (HOSTLM_CUDA_GEMV_ROWS); the engine's warm-up in its own pool: GPU memory sampled every 20 ms
# and every device allocation logged through a 262,144-token window's load and prefill.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w25; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
setsid bash -c "cd $R; sleep 5; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log" > /dev/null 2>&1 < /dev/null &
setsid bash -c "cd $R; sleep 5; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo gq8 rc \$? >> $W/gq8.log" > /dev/null 2>&1 < /dev/null &
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then ldd $B/lib/libhostlm_cuda.so | grep "not found"; fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
el "new test"
timeout 120 $B/bin/test_cuda_backend --gtest_filter='*OneToken16Bit*' 2>&1 | grep -E "^\[  |Failure|row " | head -20
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure" $OUT/cuda-tests.txt | head -30
el "waiting for the Q8_0 file"
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 400 ] && break; done; tail -1 $W/gq8.log
for rows in default 1 2 4 8 default; do
  el "tg128 9B Q8_0, rows per warp $rows"
  ( [ $rows = default ] || export HOSTLM_CUDA_GEMV_ROWS=$rows
    HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-q80.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-220 )
done
el "9B Q8_0 op profile"
HOSTLM_CUDA_PROFILE=1 timeout 60 $B/bin/hostlm bench $W/9b-q80.gguf --backend cuda -p 0 -n 64 -r 1 > $OUT/q80-profile.txt 2>&1; echo "rc $?"
sed -n '/CUDA op profile/,$p' $OUT/q80-profile.txt | head -40
el "waiting for the BF16 file"
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 420 ] && break; done; tail -1 $W/gb.log
for r in 1 2; do for group in 1 0; do
  el "tg128 9B BF16, group $group"
  HOSTLM_CUDA_GEMV16_GROUP=$group HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-220
done; done
el "262,144-token window, warm-up in the engine's pool"
wait_for_model
mkdir -p /tmp/lc && ln -sf $W/9b-q4km.gguf /tmp/lc/9b-q4_k_m.gguf
HOSTLM_CUDA_ALLOC_LOG=1 PYTHONPATH=$W/gguf-py SIZE=9b WORK=/tmp/lc STEPS="hostlm" POLL_MS=20 RESULTS=$OUT/lc9 timeout 150 tools/device/run_long_context.sh build-h200 2>&1 | grep -E "peak|prefill|t/s|FAILED|pp|tg" | head -16
cd $OUT && rm -rf lc9/raw/*.gguf; ls lc9 lc9/raw; sort -n lc9/raw/*.vram 2>/dev/null | tail -3
uniq -c lc9/raw/hostlm-bench.vram | tail -12
grep "^cuda alloc" lc9/raw/hostlm-bench.log | awk -F'\t' '{n[$3]++; b[$3]+=$2; if (!($3 in o)) {o[$3]=++k; l[k]=$3}} END {for (i=1;i<=k;i++) printf "%6d x %10.1f MiB  %s\n", n[l[i]], b[l[i]]/1048576, l[i]}'
 tar czf lc9.tgz lc9 && rm -rf lc9
el done
