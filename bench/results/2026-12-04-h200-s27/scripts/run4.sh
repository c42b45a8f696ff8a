#!/usr/bin/env bash
# Session 27, call 4: each kernel's own GPU time in 9B Q8_0 decode steps at a context of about
# 100 tokens (Nsight Compute, one kernel at a time, graphs off), to see whether the attention
# kernel itself or its place in the chain costs the ~9 us a layer of call 2's ablation.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w27; R=$PWD; B=$R/build-h200; export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B HOSTLM_LIBRARY=$B/lib/libhostlm.so
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
NCU=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | tail -1)
t0=$(date +%s); el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
mkdir -p $W; (cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz)
export PYTHONPATH=$W/gguf-py
{
( python3 tools/make_shape_gguf.py 9b $W/9b-q8.gguf --type Q8_0 > $W/gq.log 2>&1; echo "gq rc $?" >> $W/gq.log ) &
el "conv tests"
timeout 120 $B/bin/test_cuda_backend --gtest_filter='*Conv*' --gtest_brief=1 2>&1 | grep -E "^\[  |Failure|Expected" | head -8
el "Q8_0 file"; wait; tail -1 $W/gq.log
el "ncu"
HOSTLM_CUDA_GRAPHS=0 timeout 200 $NCU --metrics gpu__time_duration.sum --csv -k regex:. --launch-skip 2600 --launch-count 320 \
  $B/bin/hostlm bench $W/9b-q8.gguf --backend cuda -p 0 -n 16 -d 96 -r 1 > $OUT/ncu.csv 2> $W/ncu.err; echo "ncu rc $?"; tail -3 $W/ncu.err
python3 - "$OUT/ncu.csv" <<'PY'
import csv, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
head = rows[0]; rows = rows[1:]
ki = head.index("Kernel Name"); vi = head.index("Metric Value"); ii = head.index("ID")
seen = collections.OrderedDict()
for r in rows:
    name = r[ki].split("(")[0].split("<")[0]
    v = float(r[vi].replace(",", ""))
    seen.setdefault(name, []).append(v)
unit = head[vi]; print("unit column:", rows[0][head.index("Metric Unit")])
tot = sum(sum(v) for v in seen.values())
for n, v in sorted(seen.items(), key=lambda kv: -sum(kv[1])):
    print(f"{n[:60]:60s} n={len(v):4d} sum={sum(v):10.1f} mean={sum(v)/len(v):8.2f} max={max(v):8.2f}")
print("total", tot)
PY
el done
} 2>&1 | tee $OUT/call4.txt | cut -c1-200
