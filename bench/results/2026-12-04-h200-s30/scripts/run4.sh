#!/usr/bin/env bash
# Session 30, call 4 (warm machine of call 3): the 9B Q8_0 beside llama.cpp at depth 0, 16K
# and 64K with this build (tensor-core attention and the weight arena).
source bench/results/2026-12-04-h200-s30/scripts/env.sh
{
el "9B Q8_0"; compare 9b-q8 16384,65536 400
el done
} 2>&1 | tee $OUT/call4.txt | cut -c1-250
cd $OUT && tar czf raw.tar.gz */raw 2>/dev/null && rm -rf */raw
