#!/usr/bin/env bash
# Session 21, call 6: the 27B Q4_K_M shape at depth 0, hostlm alone (no llama.cpp build in the
# device time left): its GPU memory peak after sessions 20-21, against llama.cpp's 16,397 MiB
# of session 19's same run (call 3 there).
tar xJf .devlibs/libs.tar.xz -C .devlibs  # the libraries the device lacks, carried packed
set -u; R=$PWD; B=$R/build-h200; W=/tmp/w21f; mkdir -p $W
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz ); export PYTHONPATH=$W/gguf-py
python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/g27.log 2>&1; echo "g27 rc $?"
el "27B Q4_K_M, depth 0"
timeout 150 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/27b.json 2> $OUT/27b.err; echo "bench rc $?"
python3 -c "
import json; d = json.load(open('$OUT/27b.json'))
for r in d: print(r['test'], '%.1f t/s' % r['avg_ts'], {k: v for k, v in r.items() if 'memory' in k})"
el done
