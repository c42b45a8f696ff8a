#!/usr/bin/env bash
# Session 25, call 2 (call 1's tg128 lines were lost: they went to the output's head, which
# the allocation summary pushed out). Starts llama.cpp's build and the shape files in new
# sessions for call 3; 9B BF16 tg128 with HOSTLM_CUDA_GEMV16_GROUP=1 (default) and 0
# alternating; 9B Q8_0 tg128 with rows per warp of its one-token product forced
# (HOSTLM_CUDA_GEMV_ROWS). Everything is written to $OUT as well.
tar xJf .devlibs/libs.tar.xz -C .devlibs
[ -f /tmp/llama17/build.log ] || setsid bash .devcheck/start-llama.sh > /dev/null 2>&1 < /dev/null &
W=/tmp/w25; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
for spec in "9b bf16 BF16 gb" "9b q80 Q8_0 gq8" "0.8b 08b-q4km Q4_K_M g08"; do
  set -- $spec; name=$2; [ $1 = 9b ] && name=9b-$2
  setsid bash -c "cd $R; sleep 5; export PYTHONPATH=$W/gguf-py
    python3 tools/make_shape_gguf.py $1 $W/$name.gguf --type $3 > $W/$4.log 2>&1; echo $4 rc \$? >> $W/$4.log" > /dev/null 2>&1 < /dev/null &
done
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
{
el "waiting for the Q8_0 file"
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 400 ] && break; done; tail -1 $W/gq8.log
for rows in default 2 4 8 default 2; do
  el "tg128 9B Q8_0, rows per warp $rows"
  ( [ $rows = default ] || export HOSTLM_CUDA_GEMV_ROWS=$rows
    HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-q80.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200 )
done
el "waiting for the BF16 file"
while ! grep -q "gb rc" $W/gb.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 420 ] && break; done; tail -1 $W/gb.log
for r in 1 2; do for group in 1 0; do
  el "tg128 9B BF16, group $group"
  HOSTLM_CUDA_GEMV16_GROUP=$group HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $W/9b-bf16.gguf --backend cuda -p 0 -n 128 -r 3 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-200
done; done
el "llama.cpp build, files"
tail -1 /tmp/llama17/llama-build.log 2>/dev/null; tail -1 /tmp/llama17/build.log; for f in gguf gb gq8 g08; do tail -1 $W/$f.log; done
el done
} 2>&1 | tee $OUT/call2.txt
