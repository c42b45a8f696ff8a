#!/usr/bin/env bash
# The chunked delta rule (HOSTLM_CUDA_DELTA_CHUNKED) against the recurrent kernel on one GPU,
# in one run, for deciding its default: the CUDA tests of both forms, the op alone
# (bench_cuda_delta), then whole-model figures on one GGUF with the setting off and on in
# turn: pp512, a long prompt's prefill, 8/32/64 streams of 512-token prompts, and the op
# profile of the 64-stream prefill.
#
#   tools/device/compare_delta_chunked.sh BUILD_DIR MODEL.gguf
#
# BUILD_DIR needs bin/hostlm, bin/test_cuda_backend and bin/bench_cuda_delta
# (-DHOSTLM_BENCH=ON). Environment, optional: MIN=64 (the setting when on), LONG=16384 (the
# long prompt), RESULTS=DIR (default $OUT when set, else /tmp/hostlm-delta-chunked),
# BACKEND=cuda (cpu for a dry run of the script on a tiny model: the GPU tests skip).
set -Euo pipefail
build=${1:?usage: compare_delta_chunked.sh BUILD_DIR MODEL.gguf}
model=${2:?usage: compare_delta_chunked.sh BUILD_DIR MODEL.gguf}
min=${MIN:-64}
long=${LONG:-16384}
backend=${BACKEND:-cuda}
results=${RESULTS:-${OUT:-/tmp/hostlm-delta-chunked}}
mkdir -p "$results"
for f in "$build/bin/hostlm" "$build/bin/test_cuda_backend" "$build/bin/bench_cuda_delta" "$model"; do
  [ -e "$f" ] || { echo "compare_delta_chunked.sh: $f is missing" >&2; exit 2; }
done
t0=$(date +%s)
step() { echo "== $1 (elapsed $(($(date +%s) - t0)) s)"; }
# t/s of the last test of a JSON report on stdin, or "failed"
rate() {
  python3 -c "
import json, sys
try:
    r = json.load(sys.stdin)[-1]
    print(r['test'], round(r['avg_ts'], 1))
except Exception:
    print('failed')"
}

step "tests: the chunked form's own, then the delta-rule and model tests with every sequence chunked"
# HOSTLM_CUDA_DELTA_CHUNKED=1 sends every delta-rule launch without a fused norm through the
# chunked kernels, down to one-token decode rows: the op tests against the CPU and the tiny
# models' logits against transformers then test it inside the model; twice, for both scan ways.
tests() {  # tests LABEL FILTER [ENV...]
  local label=$1 filter=$2
  shift 2
  env "$@" timeout 300 "$build/bin/test_cuda_backend" --gtest_brief=1 --gtest_filter="$filter" \
    > "$results/tests-$label.txt" 2>&1
  echo "$label: rc $?"
  grep -E "^\[  (PASSED|FAILED|SKIPPED)|FAILED  \]" "$results/tests-$label.txt" | head -20
}
# (Not the fused decode norm's bit-equality test: its two-op side would be chunked, its fused
# side not.)
filters='*DeltaRule*:*RecurrentOps*:TinyModels/CudaQwen35.*:CudaLongContext.LogitsMatchTransformersFarOut'
filters+='-*DeltaRuleWithItsNorm*'
tests own '*DeltaChunked*'
tests all-chunked "$filters" HOSTLM_CUDA_DELTA_CHUNKED=1
tests all-chunked-l1 "$filters" HOSTLM_CUDA_DELTA_CHUNKED=1 HOSTLM_CUDA_DELTA_CHUNKED_STAGED=0

step "the op alone: the scan's factors in shared memory, then read through L1"
HOSTLM_BENCH_CHUNKED_MIN=$min timeout 300 "$build/bin/bench_cuda_delta" 2>&1 | tee "$results/op.txt"
HOSTLM_CUDA_DELTA_CHUNKED_STAGED=0 HOSTLM_BENCH_CHUNKED_MIN=$min timeout 300 \
  "$build/bin/bench_cuda_delta" 2>&1 | tee "$results/op-through-l1.txt"

bench() {  # bench SETTING ARGS...: one hostlm bench run with HOSTLM_CUDA_DELTA_CHUNKED=SETTING
  local setting=$1
  shift
  HOSTLM_CUDA_DELTA_CHUNKED=$setting timeout 300 "$build/bin/hostlm" bench "$model" --backend "$backend" "$@"
}
step "pp512, off / on alternating"
for s in 0 "$min" 0 "$min"; do
  echo -n "setting $s: "
  bench "$s" -p 512 -n 0 -r 3 -o json 2>> "$results/bench-errors.txt" | rate
done
step "pp$long, off / on"
for s in 0 "$min"; do
  echo -n "setting $s: "
  bench "$s" -p "$long" -n 0 -r 1 -o json 2>> "$results/bench-errors.txt" | rate
done
step "8/32/64 streams, off / on alternating"
for s in 0 "$min" 0 "$min"; do
  echo "setting $s:"
  bench "$s" --parallel 8,32,64 -p 512 -n 128 2>&1 | grep -E "^\| qwen"
done
step "op profile of the 64-stream prefill"
for s in 0 "$min"; do
  echo "setting $s:"
  HOSTLM_CUDA_PROFILE=1 bench "$s" --parallel 64 -p 512 -n 1 > "$results/profile-$s.txt" 2>&1
  grep -E "wall|gated_delta_rule|conv1d|matmul \(prefill|^total" "$results/profile-$s.txt"
done
step "all done"
