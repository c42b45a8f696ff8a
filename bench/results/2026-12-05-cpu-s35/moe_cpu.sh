#!/usr/bin/env bash
# Session 35, this project's 2-core machine: hostlm beside llama.cpp on the 35B-A3B shapes
# (8 of 40 layers, Q4_K_M), three pairs started alternately. LLAMA_BIN: a CPU build of
# llama.cpp made outside this repository (its llama-bench). Usage:
#   LLAMA_BIN=/path/to/llama.cpp/build/bin bash moe_cpu.sh BUILD_DIR [WORK_DIR]
set -euo pipefail
build=${1:?build dir}
work=${2:-/tmp}
root=$(cd "$(dirname "$0")/../../.." && pwd)
file=$work/moe35-8l-q4km.gguf
[ -f "$file" ] || python3 "$root/tools/make_shape_gguf.py" 35b-a3b "$file" --type Q4_K_M --layers 8
for pair in 1 2 3; do
  echo "pair $pair"
  "$build/bin/hostlm" bench "$file" -p 512 -n 128 -t 2 -r 3 | grep qwen35moe
  "$LLAMA_BIN/llama-bench" -m "$file" -p 512 -n 128 -t 2 -r 3 | grep qwen35moe
done
