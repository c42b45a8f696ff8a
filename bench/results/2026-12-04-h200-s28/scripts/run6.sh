#!/usr/bin/env bash
# Session 28, call 6 (hostlm alone; no device time was left for llama.cpp's build): the 27B
# Q4_K_M shape's GPU memory at depth 0 (session 21's open item: about 38 MiB above
# llama.cpp's 16,397 MiB of session 19 by arithmetic, never measured), pp512 and tg128, and
# tg128 after a 65,536-token prefix.
mkdir -p .devlibs/lib && tar xJf .devlibs/libs.tar.xz -C .devlibs/lib
W=/tmp/w28; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs/lib:$B/lib:${LD_LIBRARY_PATH:-}
$B/bin/hostlm --version > /dev/null 2>&1 || export LD_LIBRARY_PATH=$R/.devlibs/stdcxx:$LD_LIBRARY_PATH
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
{
el "27B Q4_K_M file"
PYTHONPATH=$W/gguf-py timeout 200 python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M 2>&1 | tail -1
el "depth 0"
timeout 120 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 512 -n 128 -r 2 -o json > $OUT/d0.json 2> $OUT/d0.err; echo "rc $?"
python3 -c "import json; [print(r.get('test'), round(r.get('avg_ts',0),1), round(r.get('device_memory_used_peak',0)/2**20)) for r in json.load(open('$OUT/d0.json'))]" 2>&1 | head
el "depth 65536"
timeout 200 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 0 -n 128 -d 65536 -r 1 -o json > $OUT/d64k.json 2> $OUT/d64k.err; echo "rc $?"
python3 -c "import json; [print(r.get('test'), round(r.get('avg_ts',0),1), round(r.get('device_memory_used_peak',0)/2**20)) for r in json.load(open('$OUT/d64k.json'))]" 2>&1 | head
tail -3 $OUT/d64k.err
el done
} 2>&1 | tee $OUT/call6.txt | cut -c1-250
