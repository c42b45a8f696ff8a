#!/usr/bin/env bash
# Session 15, call 1: the delta rule with its gated norm, and the MLP's gate/up products with
# their activation, each in one launch (plugin ABI 9). The CUDA suite (with the fused-vs-
# separate-ops tests), then tg128 of the 9B and 0.8B Q4_K_M shapes and the 9B Q8_0 shape,
# alternating session 14's final build (OLD, carried in .devcheck/old-s14.tar.xz) with this
# one, with the graph timing; then serving at 1, 8, 32 and 64 streams. Also writes the 9B
# BF16 shape in the background for call 2.
W=/tmp/w15a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
( wait_for_model; cd $W; export PYTHONPATH=$W/gguf-py; cd $R
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?" >> $W/g08.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q80.gguf --type Q8_0 > $W/gq8.log 2>&1; echo "gq8 rc $?" >> $W/gq8.log
  # For call 2 (the comparison beside llama.cpp), if the machine is still held then.
  setsid nohup bash -c "python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo bf16 rc \$? >> $W/gb.log" < /dev/null > /dev/null 2>&1 &
  ) &
mkdir -p $W/old && tar xJf .devcheck/old-s14.tar.xz -C $W/old
O=$W/old/.devold
el "full suite"
timeout 220 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|tests from .* ran|Failure|worst at" $OUT/cuda-tests.txt | head -24
wait_for_model
export HOSTLM_CUDA_GRAPH_STATS=1
tg() {  # which file label
  if [ $1 = old ]; then
    env -u HOSTLM_BUILD_DIR LD_LIBRARY_PATH=$R/.devlibs:$O/lib HOSTLM_PLUGIN_PATH=$O/manifests \
      timeout 60 $O/bin/hostlm bench $2 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$3.json 2>$OUT/$3.err
  else
    timeout 60 $B/bin/hostlm bench $2 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$3.json 2>$OUT/$3.err
  fi
  echo "$3 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$3.json 2>&1 | tail -1) | $(grep -o "a replay ran.*" $OUT/$3.err)"
}
el "9b q4km tg, old and new in turn"
for round in 1 2; do tg old $M 9b-old-r$round; tg new $M 9b-new-r$round; done
while ! grep -q "g08 rc" $W/g08.log 2>/dev/null; do sleep 2; done
el "0.8b tg"
for round in 1 2; do tg old $W/08b-q4km.gguf 08b-old-r$round; tg new $W/08b-q4km.gguf 08b-new-r$round; done
while ! grep -q "gq8 rc" $W/gq8.log 2>/dev/null; do sleep 2; done
el "9b q8_0 tg"
tg old $W/9b-q80.gguf q80-old-r1; tg new $W/9b-q80.gguf q80-new-r1
unset HOSTLM_CUDA_GRAPH_STATS
el "serving"
timeout 120 $B/bin/hostlm bench $M --backend cuda --parallel 1,8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|engine:" | tee $OUT/serving.txt
el done
