#!/usr/bin/env bash
# Session 16, call 5 (main at 9f633af; llama.cpp builds beside it, outside the repository,
# for call 6): the 9B shape in Q4_K_M with its full 262,144-token window, hostlm's part of
# tools/device/run_long_context.sh (file, plan, prefill of the window and 32 tokens after it);
# then the 27B Q4_K_M shape written for call 6, and where hostlm's GPU memory goes on it
# (HOSTLM_CUDA_ALLOC_LOG=1, summed by what each allocation is for).
set -u
W=/tmp/w16e; R=$PWD; B=$R/build-h200; t0=$(date +%s)
el() { echo "== $1 (elapsed $(( $(date +%s) - t0 )) s)"; }
export LD_LIBRARY_PATH=$R/.devlibs:$B/lib:${LD_LIBRARY_PATH:-}
export HOSTLM_SOURCE_DIR=$R HOSTLM_BUILD_DIR=$B
echo "{\"source_dir\": \"$R\"}" > $B/hostlm-build-tree.json
mkdir -p $W && ( cd $W && tar xzf $R/.devcheck/gguf-py.tar.gz )
export PYTHONPATH=$W/gguf-py
( sleep 60; python3 tools/make_shape_gguf.py 27b $W/27b-q4km.gguf --type Q4_K_M > $W/g27.log 2>&1; echo "g27 rc $?" >> $W/g27.log ) &
el "9B, 262,144-token window"
SIZE=9b STEPS="file plan hostlm" WORK=/tmp/lc9 RESULTS=$OUT/lc9 STEP_TIMEOUT=400 timeout 470 bash tools/device/run_long_context.sh $B > $OUT/lc9-log.txt 2>&1
echo "long context rc $?"; cat $OUT/lc9/summary.md 2>/dev/null | head -30 || tail -20 $OUT/lc9-log.txt
while ! grep -q "g27 rc" $W/g27.log 2>/dev/null; do sleep 2; [ $(( $(date +%s) - t0 )) -gt 500 ] && break; done
el "27b written"; tail -1 $W/g27.log
HOSTLM_CUDA_ALLOC_LOG=1 timeout 60 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 512 -n 32 -r 1 > $OUT/alloc27.txt 2>&1
echo "alloc run rc $?"; grep -E "^\| qwen" $OUT/alloc27.txt
grep "^cuda alloc" $OUT/alloc27.txt | awk -F'\t' '{w=$3; gsub(/[0-9]+/, "#", w); s[w]+=$2; n[w]++; t+=$2} END {for (k in s) printf "%10.1f MiB %5d x %s\n", s[k]/1048576, n[k], k; printf "%10.1f MiB total\n", t/1048576}' | sort -rn | head -30
el done
