#!/usr/bin/env bash
# Session 40, second call: build M (main after the merge: .devcarry/h200-b.tar.xz, paths
# build-h200-b/) alone: `hostlm serve`
# through its HTTP API at 32 / 64 streams and the cached 8K prefix with the step
# counters (/metrics: time per step inside and outside the forward pass), then the 35B-A3B
# Q4_K_M shapes with every expert on the GPU and all of them on the CPU (--cpu-moe).
source bench/results/2026-12-05-h200-s37/scripts/env.sh
tar xJf .devcarry/h200-b.tar.xz; M=$R/build-h200-b
echo "{\"source_dir\": \"$R\"}" > $M/hostlm-build-tree.json
with_build() { local b=$1; shift; env HOSTLM_BUILD_DIR=$b HOSTLM_LIBRARY=$b/lib/libhostlm.so LD_LIBRARY_PATH=$b/lib:$LD_LIBRARY_PATH "$@"; }
make_file 9b-q4km 9b Q4_K_M
make_file 35b-q4km 35b-a3b Q4_K_M
{
nproc; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
wait_file 9b-q4km 240
el "hostlm serve alone, 32/64 streams and the cached 8K prefix"
STREAMS=32,64 PREFIX_TTFT=8192 PREFIX_NEW=32 VOCAB=240000 RESULTS=$OUT/serving \
  timeout 150 bash tools/device/run_serving_compare.sh $W/9b-q4km.gguf $M > $OUT/serving-log.txt 2>&1
echo "serve rc $?"
grep -E "^\| hostlm|hostlm steps" $OUT/serving-log.txt
wait_file 35b-q4km 200
for moe in "" "--cpu-moe"; do
  el "35B-A3B pp512, tg128 $moe"
  with_build $M timeout 120 $M/bin/hostlm bench $W/35b-q4km.gguf --backend cuda -p 512 -n 128 -r 1 $moe 2>&1 | grep -E "^\| qwen|rror|on the CPU" | tr -s ' ' | cut -c1-200
done
el done
} 2>&1 | tee $OUT/run2.txt | cut -c1-250
