#!/usr/bin/env bash
# Session 29, call 3: the 27B BF16 shape beside llama.cpp at depths 0, 16384 and 65536.
source bench/results/2026-12-04-h200-s29/scripts/env.sh
bash .devcheck/start-llama.sh
rm -f $W/27b-q8.gguf $W/27b-q4km.gguf
make_file 27b-bf16 27b BF16
{
df -h /tmp | tail -1; el "waiting for llama.cpp"; wait_llama
wait_file 27b-bf16 400; el "27B BF16"; compare 27b-bf16 16384,65536 $(left 580)
el done
} 2>&1 | tee $OUT/call3.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw && rm -rf */raw
