#!/usr/bin/env bash
# Session 31, call 2: where prefill's products lose time (the 64-stream run's prefill: 69% of
# its GPU time in "matmul (prefill)", 407 TFLOP/s counting everything). cuBLAS alone per shape
# (the backend's cublasGemmEx vs cuBLASLt's algorithms), then the backend's q4_K / q6_K / f16
# products at 2048 tokens (dequantize + cuBLAS against cuBLAS alone).
source bench/results/2026-12-04-h200-s31/scripts/env.sh
{
el "cuBLAS alone"
timeout 120 $B/bin/bench_cuda_gemm 2048
timeout 120 $B/bin/bench_cuda_gemm 512
el "backend products at 2048 tokens"
HOSTLM_BENCH_TOKENS=2048 timeout 200 $B/bin/bench_cuda_quant q4_K q6_K f16
el done
} 2>&1 | tee $OUT/call2.txt | cut -c1-250
