#!/usr/bin/env bash
# Session 29, call 2: the 27B Q8_0 shape beside llama.cpp at depths 0, 16384 and 65536.
source bench/results/2026-12-04-h200-s29/scripts/env.sh
bash .devcheck/start-llama.sh
rm -f $W/9b-*.gguf $W/9b-*.log
make_file 27b-q8 27b Q8_0
{
df -h /tmp | tail -1; el "waiting for llama.cpp"; wait_llama
wait_file 27b-q8; el "27B Q8_0"; compare 27b-q8 16384,65536 $(left 585)
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-250
