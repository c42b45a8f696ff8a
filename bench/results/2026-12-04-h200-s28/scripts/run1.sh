#!/usr/bin/env bash
# Session 28, call 1: where the GPU's wait between replayed decode steps goes. Each graph
# recording and miss as it happens (HOSTLM_CUDA_GRAPH_STATS=2 names the first op in which a
# missed step differs from the closest recording) and the host's pass and launch times, on
# tg128 of the 9B Q8_0 and 0.8B Q4_K_M shapes, and the 64-stream engine bench on 9B Q4_K_M.
mkdir -p .devlibs/lib && tar xJf .devlibs/libs.tar.xz -C .devlibs/lib
W=/tmp/w28; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs/lib:$B/lib:${LD_LIBRARY_PATH:-}
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
ldd $B/lib/libhostlm_cuda.so | grep "not found"
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
setsid bash -c "cd $R; export PYTHONPATH=$W/gguf-py
  python3 tools/make_shape_gguf.py 9b $W/9b-q8.gguf --type Q8_0 > $W/gq.log 2>&1; echo gq rc \$? >> $W/gq.log
  python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g8.log 2>&1; echo g8 rc \$? >> $W/g8.log
  python3 tools/make_shape_gguf.py 9b $W/9b-q4km.gguf --type Q4_K_M > $W/g4.log 2>&1; echo g4 rc \$? >> $W/g4.log" > /dev/null 2>&1 < /dev/null &
waitfor() { for i in $(seq 1 400); do grep -q "$1 rc" $W/$1.log 2>/dev/null && break; sleep 1; done; tail -2 $W/$1.log; }
tg() {  # label, file, bench args, env...
  local label=$1 file=$2 args=$3; shift 3
  env "$@" timeout 90 $B/bin/hostlm bench $file --backend cuda $args > $W/o.txt 2> $W/e.txt
  echo "$label | $(grep -o 'tg[0-9]* *| *[0-9.]*' $W/o.txt | tr -s ' ' | tr '\n' ' ')"
  grep "hostlm cuda graphs" $W/e.txt | grep -v "step [0-9]* recorded\|missed" | cut -c20-400
  grep -c "step [0-9]* recorded" $W/e.txt | sed 's/^/recordings: /'
  grep "missed" $W/e.txt | grep -v "recorded," | head -12
  grep -i "error\|abort" $W/e.txt | head -2
}
{
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
el "Q8_0 file"; waitfor gq
tg "q8 stats2" $W/9b-q8.gguf "-p 0 -n 128 -r 2" HOSTLM_CUDA_GRAPH_STATS=2
tg "q8 stats1" $W/9b-q8.gguf "-p 0 -n 128 -r 2" HOSTLM_CUDA_GRAPH_STATS=1
el "0.8B file"; waitfor g8
tg "0.8b stats2" $W/08b-q4km.gguf "-p 0 -n 128 -r 3" HOSTLM_CUDA_GRAPH_STATS=2
el "9B Q4_K_M file"; waitfor g4
HOSTLM_CUDA_GRAPH_STATS=1 timeout 90 $B/bin/hostlm bench $W/9b-q4km.gguf --backend cuda --parallel 64 -p 512 -n 128 > $W/o64.txt 2> $W/e64.txt
grep -E "^\| qwen" $W/o64.txt | cut -c1-250; grep "hostlm cuda graphs" $W/e64.txt | cut -c20-400
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-400
