#!/usr/bin/env bash
# Session 23, call 1: (a) long windows on a GPU get 512-token prefill steps and two state
# snapshots by default: the new CudaEngineMemory tests, the plan check at 262,144 tokens, and
# the 262,112-token prompt's peak GPU memory and prefill time, then the same with -b 2048 (the
# old default); (b) where the 64-token Q4_K tile product (12288 x 4096) and the BF16
# one-token product (4096 x 12288) lose their time: Nsight Compute (full set, source page with
# per-instruction stalls) and the SASS of both kernels; (c) the 64-stream engine bench.
tar xJf .devlibs/libs.tar.xz -C .devlibs
W=/tmp/w23a; source bench/results/2026-12-01-h200-s10/scripts/device_env.sh
if ldd $B/lib/libhostlm_cuda.so | grep -q "not found"; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(python3 -c "import nvidia.cublas as m; print(list(m.__path__)[0] + '/lib')")
fi
export HOSTLM_LIBRARY=$B/lib/libhostlm.so
nvidia-smi --query-gpu=name,driver_version,memory.used,clocks.max.sm --format=csv,noheader
el "CudaEngineMemory tests"
timeout 100 $B/bin/test_cuda_backend --gtest_filter='*CudaEngineMemory*' --gtest_brief=1 2>&1 | tail -6
el "SASS"
CUOBJ=$(ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1); [ -z "$CUOBJ" ] && CUOBJ=$(which cuobjdump)
echo "cuobjdump: $CUOBJ"
$CUOBJ -sass -arch sm_90 $B/lib/libhostlm_cuda.so > $W/all.sass 2>&1; echo "cuobjdump rc $?"
python3 - $W/all.sass $OUT <<'PY'
import re, sys
text = open(sys.argv[1]).read().split("\n")
keep = {"tile_q4k": [], "gemv16_one_token": []}
cur = None
for line in text:
    m = re.match(r"\s*Function : (\S+)", line)
    if m:
        cur = next((k for k in keep if k in m.group(1)), None)
        if cur: keep[cur].append([line])
        continue
    if cur: keep[cur][-1].append(line)
for k, fns in keep.items():
    with open(f"{sys.argv[2]}/{k}.sass", "w") as f:
        for fn in fns: f.write("\n".join(fn) + "\n")
    print(k, len(fns), "functions", [len(fn) for fn in fns])
PY
el "ncu: Q4_K tile product, 12288 x 4096, 64 tokens"
if [ -n "$NCU" ]; then
  HOSTLM_BENCH_TOKENS=64 timeout 200 $NCU --set full --import-source no -k regex:tile_q4k --launch-skip 60 --launch-count 1 -o $OUT/tile64 $B/bin/bench_cuda_quant q4_K > $W/ncu1.txt 2>&1; echo "ncu rc $?"; tail -3 $W/ncu1.txt
  $NCU --import $OUT/tile64.ncu-rep --page details > $OUT/tile64-details.txt 2>&1
  $NCU --import $OUT/tile64.ncu-rep --page source --csv --print-source sass > $OUT/tile64-source.csv 2>&1; echo "source rc $?"
  grep -E "Duration|Registers|Achieved Occupancy|Theoretical Occupancy|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Memory Throughput|DRAM Throughput|Stall" $OUT/tile64-details.txt | head -30
  el "ncu: BF16 one-token product, 4096 x 12288"
  HOSTLM_BENCH_TOKENS=1 timeout 150 $NCU --set full --import-source no -k regex:gemv16_one_token --launch-skip 830 --launch-count 1 -o $OUT/bf16 $B/bin/bench_cuda_quant bf16 > $W/ncu2.txt 2>&1; echo "ncu rc $?"; tail -3 $W/ncu2.txt
  $NCU --import $OUT/bf16.ncu-rep --page details > $OUT/bf16-details.txt 2>&1
  $NCU --import $OUT/bf16.ncu-rep --page source --csv --print-source sass > $OUT/bf16-source.csv 2>&1
  grep -E "Grid Size|Duration|Registers|Achieved Occupancy|Memory Throughput|DRAM Throughput|Warp Cycles Per Issued" $OUT/bf16-details.txt | head -12
fi
wait_for_model
el "plan at 262144 tokens"
PYTHONPATH=$W/gguf-py timeout 120 python3 tools/context_memory.py --check $M --ctx 262144 --hostlm $B/bin/hostlm --backend cuda > $OUT/plan-check.txt 2>&1; echo "plan check rc $?"
grep -E "^\| 262144|equals|DIFFERS" $OUT/plan-check.txt
for b in default 2048; do
  el "262,112-token prompt, 32 generated, batch $b"
  rm -f $W/mem.txt
  ( while true; do nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits >> $W/mem.txt; sleep 0.5; done ) & P=$!
  BF=""; [ $b != default ] && BF="-b $b"
  timeout 150 $B/bin/hostlm bench $M --backend cuda --parallel 1 -p 262112 -n 32 $BF > $W/lc-$b.txt 2> $W/lc-$b.err; echo "bench rc $?"
  kill $P
  echo "peak GPU memory $(sort -n $W/mem.txt | tail -1) MiB"
  tail -2 $W/lc-$b.txt; grep -iE "KV|total|plan|scratch|snapshot" $W/lc-$b.err | head -8
  cp $W/lc-$b.txt $W/lc-$b.err $OUT/
  [ $b = default ] && { el "engine bench 64 streams"; HOSTLM_CUDA_GRAPH_STATS=1 timeout 60 $B/bin/hostlm bench $M --backend cuda --parallel 64 -p 512 -n 128 2>&1 | grep -E "^\| qwen|a replay ran" | cut -c1-250; }
done
el done
