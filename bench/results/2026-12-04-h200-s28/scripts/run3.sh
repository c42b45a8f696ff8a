#!/usr/bin/env bash
# Session 28, call 3: the next decode step's pass made while the step runs
# (Backend::begin_step_ahead; HOSTLM_CUDA_AHEAD=0 turns it off). The graph-replay tests and
# the whole CUDA suite; tg128 alternating on/off on the 9B Q8_0, 9B BF16 and 0.8B Q4_K_M
# shapes; the 64-stream engine bench on the 9B Q4_K_M shape, alternating.
mkdir -p .devlibs/lib && tar xJf .devlibs/libs.tar.xz -C .devlibs/lib
W=/tmp/w28; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs/lib:$B/lib:${LD_LIBRARY_PATH:-}
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
setsid bash -c "cd $R; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q8.gguf --type Q8_0 > $W/gq.log 2>&1; echo gq rc \$? >> $W/gq.log
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g8.log 2>&1; echo g8 rc \$? >> $W/g8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q4km.gguf --type Q4_K_M > $W/g4.log 2>&1; echo g4 rc \$? >> $W/g4.log
  python3 tools/make_shape_gguf.py 9b $W/9b-bf16.gguf --type BF16 > $W/gb.log 2>&1; echo gb rc \$? >> $W/gb.log" > /dev/null 2>&1 < /dev/null &
waitfor() { for i in $(seq 1 500); do grep -q "$1 rc" $W/$1.log 2>/dev/null && break; sleep 1; done; tail -1 $W/$1.log; }
tg() {  # label, file, bench args, env...
  local label=$1 file=$2 args=$3; shift 3
  env "$@" HOSTLM_CUDA_GRAPH_STATS=1 timeout 120 $B/bin/hostlm bench $file --backend cuda $args > $W/o.txt 2> $W/e.txt
  echo "$label | $(grep -o 'tg[0-9]* *| *[0-9.]*' $W/o.txt | tr -s ' ' | tr '\n' ' ') | $(grep -o 'a replay ran [0-9.]* us' $W/e.txt) | $(grep -o 'GPU then waited [0-9.]* us' $W/e.txt) | $(grep -o '[0-9]* passes made ahead took [0-9.]* us each; [0-9]*' $W/e.txt)"
  grep -i "error\|abort" $W/e.txt | head -2
}
{
el "graph replay tests"
timeout 120 $B/bin/test_cuda_backend --gtest_filter='CudaGraphReplay.*' 2>&1 | grep -E "^\[  |Failure|Expected|Which is|actual|passes made" | head -20
el "cuda tests"
timeout 300 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure" $OUT/cuda-tests.txt | head -12
el "Q8_0"; waitfor gq
for r in 1 2 3; do for a in 1 0; do tg "q8 ahead $a r$r" $W/9b-q8.gguf "-p 0 -n 128 -r 2" HOSTLM_CUDA_AHEAD=$a; done; done
el "0.8B"; waitfor g8
for r in 1 2; do for a in 1 0; do tg "0.8b ahead $a r$r" $W/08b-q4km.gguf "-p 0 -n 128 -r 3" HOSTLM_CUDA_AHEAD=$a; done; done
el "64 streams"; waitfor g4
for r in 1 2; do for a in 1 0; do
  HOSTLM_CUDA_AHEAD=$a HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $W/o64.txt 2> $W/e64.txt
  echo "64 ahead $a r$r $(grep -E '^\| qwen' $W/o64.txt | cut -c1-200) $(grep -o 'GPU then waited [0-9.]* us' $W/e64.txt) $(grep -o '[0-9]* passes made ahead took [0-9.]* us each; [0-9]*' $W/e64.txt)"
done; done
el "BF16"; waitfor gb
for r in 1 2; do for a in 1 0; do tg "bf16 ahead $a r$r" $W/9b-bf16.gguf "-p 0 -n 128 -r 2" HOSTLM_CUDA_AHEAD=$a; done; done
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-400
