#!/usr/bin/env bash
# Session 30, call 1: the weights in one device range (WeightArena; HOSTLM_CUDA_WEIGHT_ARENA=0
# for one cudaMalloc a weight) and two variants of the split decode attention for head_dim 256
# on F16 pages: compiled for 3 blocks an SM (HOSTLM_CUDA_ATTENTION_MIN_BLOCKS=3) and on tensor
# cores (HOSTLM_CUDA_ATTENTION_MMA=1, first run on a GPU). CUDA suite first, then the MMA
# kernel under the paged/logits tests, the attention alone, the 27B Q4_K_M at 64K, and the
# 27B Q8_0's GPU memory beside llama.cpp.
source bench/results/2026-12-04-h200-s30/scripts/env.sh
bash .devcheck/start-llama.sh
make_file 27b-q4km 27b Q4_K_M
tg() { # FILE DEPTH LABEL ENV...
  local f=$1 d=$2 label=$3; shift 3
  env "$@" timeout 100 $B/bin/hostlm bench $W/$f.gguf --backend cuda -p 0 -n 128 -d $d -r 2 -o json 2>/dev/null |
    python3 -c "import json,sys; r=json.load(sys.stdin)[-1]; print('$f d$d $label:', r['test'], round(r['avg_ts'],1), [round(x,1) for x in r['samples_ts']], round(r['device_memory_used_peak']/2**20))"
}
{
$B/bin/hostlm --version | head -1; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
el "cuda tests"
timeout 200 $B/bin/test_cuda_backend --gtest_brief=1 > $OUT/cuda-tests.txt 2>&1; echo "cuda tests rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]|Failure|CudaWeightMemory" $OUT/cuda-tests.txt | head -16
el "cuda tests under the tensor-core attention"
HOSTLM_CUDA_ATTENTION_MMA=1 timeout 100 $B/bin/test_cuda_backend --gtest_brief=1 --gtest_filter='*Paged*:*Graph*:*Logits*:*LongContext*:*Engine*' > $OUT/cuda-tests-mma.txt 2>&1; echo "rc $?"
grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" $OUT/cuda-tests-mma.txt | head -40
grep -E -A3 "Failure" $OUT/cuda-tests-mma.txt | grep -E "worst|Which is|Expected|<=" | head -30
el "attention alone"
for v in "0 1" "0 3" "1 1" "1 3"; do set -- $v; echo "-- mma $1, min blocks $2"
  HOSTLM_CUDA_PROFILE=1 HOSTLM_CUDA_ATTENTION_MMA=$1 HOSTLM_CUDA_ATTENTION_MIN_BLOCKS=$2 timeout 60 $B/bin/bench_cuda_attention 16384 65536 2>&1 | grep -E "^f16|paged_attention"
done
wait_file 27b-q4km; el "27B Q4_K_M tg128 at 64K"
for v in "0 1" "0 3" "1 1" "1 3"; do set -- $v
  tg 27b-q4km 65536 "mma $1 minblocks $2" HOSTLM_CUDA_ATTENTION_MMA=$1 HOSTLM_CUDA_ATTENTION_MIN_BLOCKS=$2
done
make_file 27b-q8 27b Q8_0
el "27B Q4_K_M weights, arena on / off"
tg 27b-q4km 0 "arena" HOSTLM_CUDA_WEIGHT_ARENA=1
tg 27b-q4km 0 "no arena" HOSTLM_CUDA_WEIGHT_ARENA=0
HOSTLM_CUDA_ALLOC_LOG=1 timeout 60 $B/bin/hostlm bench $W/27b-q4km.gguf --backend cuda -p 0 -n 4 -r 1 2>&1 >/dev/null | awk -F'\t' '/^cuda/ {n[$1]++; s[$1]+=$2} END {for (k in n) printf "%s: %d, %.1f MiB\n", k, n[k], s[k]/1048576}'
rm -f $W/27b-q4km.gguf
wait_file 27b-q8; el "waiting for llama.cpp"; wait_llama
el "27B Q8_0 beside llama.cpp"; compare 27b-q8 "" $(left 585)
el done
} 2>&1 | tee $OUT/call1.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
