# Sourced by session 41's call scripts (session 37's env.sh with the carried libraries placed last: they
# fill in only what the machine lacks, so its own curl, OpenSSL and Python keep theirs).
# The build comes as one archive (.devcarry/h200.tar.xz: the binaries and libraries the calls use).
[ -f .devcarry/h200.tar.xz ] && tar xJf .devcarry/h200.tar.xz
mkdir -p .devlibs/lib && tar xJf .devlibs/libs.tar.xz -C .devlibs/lib
W=/tmp/w41; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$B/lib:${LD_LIBRARY_PATH:-}:$R/.devlibs/lib
# cuBLAS from the toolkit when the machine has it, else from PyTorch's wheel.
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
left() { echo $(( $1 - ($(date +%s) - t0) )); }
mkdir -p $W; [ -d $W/gguf-py ] || (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
L=/tmp/llama/llama.cpp/build/bin
# make NAME SIZE TYPE: writes $W/NAME.gguf in the background unless a finished one is there.
make_file() {
  grep -q "$1 rc 0" $W/$1.log 2>/dev/null && return
  setsid bash -c "cd $R; PYTHONPATH=$W/gguf-py python3 tools/make_shape_gguf.py $2 $W/$1.gguf --type $3 > $W/$1.log 2>&1; echo $1 rc \$? >> $W/$1.log" > /dev/null 2>&1 < /dev/null &
}
wait_file() { for i in $(seq 1 ${2:-500}); do grep -q "$1 rc" $W/$1.log 2>/dev/null && break; sleep 1; done; tail -2 $W/$1.log | tr '\n' ' '; echo; }
wait_llama() { for i in $(seq 1 300); do grep -q "llama rc" /tmp/llama/build.log 2>/dev/null && break; sleep 2; done; tail -1 /tmp/llama/build.log; }
# compare NAME DEPTHS TIMEOUT: hostlm beside llama.cpp on $W/NAME.gguf, two repetitions.
compare() {
  DEPTHS="$2" REPS=2 STEP_TIMEOUT=150 LLAMA_BIN=$L RESULTS=$OUT/$1 timeout $3 bash tools/device/run_bench_compare.sh $B $W/$1.gguf > $OUT/$1-log.txt 2>&1; echo "compare $1 rc $?"
  sed -n '/^| file/,/^$/p' $OUT/$1/summary.md; tail -2 $OUT/$1-log.txt | cut -c1-200; rm -rf $OUT/$1/raw/*.json.tmp
}
# tg FILE DEPTH LABEL ENV...: hostlm alone, tg128 at DEPTH, two repetitions.
tg() {
  local f=$1 d=$2 label=$3; shift 3
  env "$@" timeout 120 $B/bin/hostlm bench $W/$f.gguf --backend cuda -p 0 -n 128 -d $d -r 2 -o json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print('$f d$d $label:', r['test'], round(r['avg_ts'],1), [round(x,1) for x in r['samples_ts']], round(r['device_memory_used_peak']/2**20))"
}
