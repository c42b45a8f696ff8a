#!/usr/bin/env bash
# Session 17, call 2 (the machine call 1 left warm, its files in /tmp/w17a): the tg
# experiments that call 1 did not reach (its script stopped on an unset variable). Call 1 was: first run of the device-side best logits (backends/cuda/best_logits.cu).
# Its test and the whole CUDA suite; then the engine bench (hostlm serve's sampling: top_k 40)
# at 1, 32 and 64 streams with HOSTLM_CUDA_BEST_LOGITS=0 and 1 in turn, with the graph timing;
# then two timing-only experiments on tg128 of the 9B and 0.8B Q4_K_M shapes (uncommitted
# switches: HOSTLM_X_SKIP_NORM leaves out the residual norms, HOSTLM_X_SKIP_DOWNLOAD the
# logits' copy), to size what folding the norm into the products, and the gap between steps,
# could give.
W=/tmp/w17a; t0=$(date +%s); R=$PWD; B=$R/build-h200
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
M=$W/9b-q4km.gguf; ls -la $W
# This machine's libraries: cuBLAS from the image (or its Python wheel), libstdc++ carried
# only if the image's is older.
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  ldd $B/lib/libhostlm_cuda.so | grep "not found"
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
$B/bin/hostlm --version
tg() {  # file label [env]
  env ${3:-} HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $1 --backend cuda -p 0 -n 128 -r 3 -o json > $OUT/$2.json 2>$OUT/$2.err
  echo "$2 $(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('%s=%.1f' % (r['test'], r['avg_ts']) for r in d))" $OUT/$2.json 2>&1 | tail -1) | $(grep -o "a replay ran.*" $OUT/$2.err)"
}
el "tg experiments, 9B"
for round in 1 2; do
  tg $M 9b-plain-r$round; tg $M 9b-nonorm-r$round HOSTLM_X_SKIP_NORM=1; tg $M 9b-nodl-r$round HOSTLM_X_SKIP_DOWNLOAD=1
done
if ! grep -q "g08 rc 0" $W/g08.log 2>/dev/null; then
  el "writing the 0.8B file"; PYTHONPATH=$W/gguf-py python3 tools/make_shape_gguf.py 0.8b $W/08b-q4km.gguf --type Q4_K_M > $W/g08.log 2>&1; echo "g08 rc $?"
fi
el "tg experiments, 0.8B"
for round in 1 2; do
  tg $W/08b-q4km.gguf 08b-plain-r$round; tg $W/08b-q4km.gguf 08b-nonorm-r$round HOSTLM_X_SKIP_NORM=1; tg $W/08b-q4km.gguf 08b-nodl-r$round HOSTLM_X_SKIP_DOWNLOAD=1
done
el done
