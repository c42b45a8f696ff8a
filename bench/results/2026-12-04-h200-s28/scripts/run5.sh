#!/usr/bin/env bash
# Session 28, call 5: beside llama.cpp (unslothai fork, built outside the repository in this
# call by .devcheck/start-llama.sh, not committed) on the 9B Q8_0, 9B BF16, 9B Q4_K_M and
# 0.8B Q4_K_M shapes: pp512 and tg128 at depth 0, two repetitions each, one engine after the
# other (tools/device/run_bench_compare.sh). The CUDA suite runs while llama.cpp builds.
mkdir -p .devlibs/lib && tar xJf .devlibs/libs.tar.xz -C .devlibs/lib
W=/tmp/w28; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs/lib:$B/lib:${LD_LIBRARY_PATH:-}
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
bash .devcheck/start-llama.sh
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
setsid bash -c "cd $R; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q8.gguf --type Q8_0 > $W/gq.log 2>&1; echo gq rc \$? >> $W/gq.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q4km.gguf --type Q4_K_M > $W/g4.log 2>&1; echo g4 rc \$? >> $W/g4.log
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g8.log 2>&1; echo g8 rc \$? >> $W/g8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log" > /dev/null 2>&1 < /dev/null &
waitfor() { for i in $(seq 1 500); do grep -q "$1 rc" $W/$1.log 2>/dev/null && break; sleep 1; done; tail -1 $W/$1.log; }
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "waiting for llama.cpp"
for i in $(seq 1 240); do grep -q "llama rc" /tmp/llama/build.log 2>/dev/null && break; sleep 2; done; tail -3 /tmp/llama/build.log
for f in gq g4 g8 gb; do waitfor $f; done
el "compare, depth 0"
left=$(( 585 - ($(date +%s) - t0) ))
DEPTHS="" REPS=2 STEP_TIMEOUT=60 LLAMA_BIN=/tmp/llama/llama.cpp/build/bin RESULTS=$OUT/cmp timeout $left bash tools/device/run_bench_compare.sh $B $W/9b-q8.gguf $W/9b-bf16.gguf $W/9b-q4km.gguf $W/08b-q4km.gguf > $OUT/compare-log.txt 2>&1; echo "compare rc $?"
sed -n '/^| file/,/^$/p' $OUT/cmp/summary.md
tail -5 $OUT/compare-log.txt
rm -rf $OUT/cmp/raw
el done
} 2>&1 | tee $OUT/call5.txt | cut -c1-250
