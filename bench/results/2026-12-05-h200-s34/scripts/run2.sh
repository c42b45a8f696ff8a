#!/usr/bin/env bash
# Session 34, call 2: tools/device/compare_delta_chunked.sh on the 9B Q4_K_M (the chunked delta
# rule's tests with every sequence chunked, both scan ways; the op alone; pp512; a 16K prompt;
# 8/32/64 streams; the 64-stream prefill's op profile, conv1d now with its taps fixed at 4;
# off and on in turn).
source bench/results/2026-12-05-h200-s34/scripts/env.sh
make_file 9b-q4km 9b Q4_K_M
wait_file 9b-q4km 150
RESULTS=$OUT/chunked timeout 560 bash tools/device/compare_delta_chunked.sh $B $W/9b-q4km.gguf 2>&1 | tee $OUT/call2.txt | cut -c1-250
