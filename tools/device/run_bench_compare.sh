#!/usr/bin/env bash
# hostlm beside llama.cpp on the same GGUF files in the same run (issue 5): for each file and
# each depth (0, then DEPTHS), `hostlm bench FILE -p NPROMPT -n NGEN -d DEPTH -r REPS -o json`
# and, with LLAMA_BIN given, `llama-bench -m FILE -p NPROMPT -n NGEN -d DEPTH -r REPS -o json
# -ngl 99 -fa 1`, one after the other. While each step runs, nvidia-smi samples the GPU's
# memory in use (skipped where there is no nvidia-smi). tools/device/bench_compare_table.py
# turns the reports into one table: file, test (pp512, tg128, pp512 @ d16384, ...), t/s of
# each, the ratio hostlm / llama.cpp, and the GPU memory peaks (hostlm's own report beside
# nvidia-smi's). Writes summary.md, summary.json and the raw reports and logs (raw/) to
# $RESULTS.
#
#   tools/device/run_bench_compare.sh BUILD_DIR MODEL.gguf [MODEL2.gguf ...]
#
# Environment, all optional:
#   DEPTHS=16384,65536  depths beside 0 (DEPTHS="" for depth 0 only)
#   NPROMPT=512   NGEN=128   REPS=3 (timed repetitions, both engines)
#   BACKEND=cuda        hostlm's --backend (cpu for a dry run on the tiny model)
#   LLAMA_BIN=DIR       llama.cpp's build/bin with llama-bench (built outside the repo)
#   LLAMA_ARGS="..."    llama-bench's other options (default: -ngl 99 -fa 1)
#   STEP_TIMEOUT=600    seconds before one step (one engine, file and depth) is stopped
#   RESULTS=DIR         (default: $OUT when set, else /tmp/hostlm-bench-compare)
#   GPU=0               the nvidia-smi index to sample     POLL_MS=20   its sampling period
# A step that fails or runs out of time does not stop the script: its tests read "failed" or
# "timeout" in the table (with the log named below it), and the script ends with status 3
# once the summary is written. Bad arguments or a missing build stop it at once.
# Time: both evaluate each DEPTH prefix once (untimed) and start every run from it, so a deep
# step costs one long prefill per engine plus the runs.
set -Eeuo pipefail
trap 'echo "run_bench_compare.sh: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR

usage="usage: run_bench_compare.sh BUILD_DIR MODEL.gguf [MODEL2.gguf ...]"
[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
build=$(cd "$1" && pwd)
shift
models=()
for m in "$@"; do
  [ -f "$m" ] || { echo "$m: no such file" >&2; exit 2; }
  models+=("$(realpath "$m")")
done
cd "$(dirname "$0")/../.."
root=$PWD
hostlm=$build/bin/hostlm
depths_extra=${DEPTHS-16384,65536}
n_prompt=${NPROMPT:-512}
n_gen=${NGEN:-128}
reps=${REPS:-3}
backend=${BACKEND:-cuda}
llama_bin=${LLAMA_BIN:-}
llama_args=${LLAMA_ARGS:--ngl 99 -fa 1}
step_timeout=${STEP_TIMEOUT:-600}
results=${RESULTS:-${OUT:-/tmp/hostlm-bench-compare}}
gpu=${GPU:-0}
poll_ms=${POLL_MS:-20}
raw=$results/raw
manifest=$raw/steps.tsv

[ -x "$hostlm" ] || { echo "no $hostlm: build first (cmake --build $build --target hostlm_cli)" >&2; exit 2; }
for v in "$n_prompt" "$n_gen" "$reps" "$step_timeout" "$poll_ms"; do
  [[ $v =~ ^[0-9]+$ ]] || { echo "NPROMPT, NGEN, REPS, STEP_TIMEOUT, POLL_MS: '$v' is not a number" >&2; exit 2; }
done
if [ "$reps" -lt 1 ] || [ $((n_prompt + n_gen)) -lt 1 ]; then
  echo "need REPS >= 1 and NPROMPT + NGEN >= 1" >&2
  exit 2
fi
depths=(0)
IFS=, read -r -a extra <<< "$depths_extra"
for d in "${extra[@]}"; do
  [[ $d =~ ^[0-9]+$ ]] || { echo "DEPTHS: '$d' is not a non-negative integer" >&2; exit 2; }
  if [ "$d" -gt 0 ]; then depths+=("$d"); fi
done
if [ -n "$llama_bin" ]; then
  [ -x "$llama_bin/llama-bench" ] || { echo "LLAMA_BIN=$llama_bin: no llama-bench there" >&2; exit 2; }
fi

mkdir -p "$raw"
rm -f "$raw"/*
: > "$manifest"
# llama-bench runs with the caller's library path (its build finds its own libraries).
llama_ld_path=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
smi=0
if command -v nvidia-smi > /dev/null &&
   nvidia-smi -i "$gpu" --query-gpu=memory.used --format=csv,noheader,nounits > /dev/null 2>&1; then
  smi=1
  nvidia-smi -i "$gpu" --query-gpu=name,memory.total,driver_version --format=csv,noheader
else
  echo "no nvidia-smi here: GPU memory is not sampled"
fi
"$hostlm" --version
start=$SECONDS
failures=0
smi_pid=""
step_pid=""
# The memory sampler of the step under way goes with the script, however it ends.
stop_sampler() {
  if [ -n "$smi_pid" ]; then
    kill "$smi_pid" 2> /dev/null || true
    wait "$smi_pid" 2> /dev/null || true
    smi_pid=""
  fi
}
# So does the step itself: `timeout` runs it in a process group of its own, which a signal to
# the script's group (an outer `timeout`, Ctrl-C) does not reach, and a benchmark left running
# would share the GPU with whatever the caller runs next. `timeout` passes TERM on to it.
stop_children() {
  stop_sampler
  if [ -n "$step_pid" ]; then
    kill "$step_pid" 2> /dev/null || true
    wait "$step_pid" 2> /dev/null || true
    step_pid=""
  fi
}
trap stop_children EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# run_step FILE_LABEL ENGINE DEPTH CMD...: runs CMD under STEP_TIMEOUT, stdout to
# raw/FILE_LABEL.ENGINE.dDEPTH.json, stderr to .log, nvidia-smi samples to .vram (the sample
# before it to .vram_base), and adds a line to the manifest the table is made from.
run_step() {
  local label=$1 engine=$2 depth=$3
  shift 3
  local name=$label.$engine.d$depth rc=0 status=ok vram=- base=-
  printf '== [%5ds] %s, depth %s: %s\n' $((SECONDS - start)) "$label" "$depth" "$engine"
  if [ $smi = 1 ]; then
    nvidia-smi -i "$gpu" --query-gpu=memory.used --format=csv,noheader,nounits \
      > "$raw/$name.vram_base" 2> /dev/null || true
    nvidia-smi -i "$gpu" --query-gpu=memory.used --format=csv,noheader,nounits -lms "$poll_ms" \
      > "$raw/$name.vram" 2> /dev/null &
    smi_pid=$!
    vram=$name.vram
    base=$name.vram_base
  fi
  # In the background and waited for, so that a signal to the script is handled at once.
  timeout -k 30 "$step_timeout" "$@" > "$raw/$name.json" 2> "$raw/$name.log" &
  step_pid=$!
  wait "$step_pid" || rc=$?
  step_pid=""
  stop_sampler
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    status=timeout
    echo "   stopped after $step_timeout s (STEP_TIMEOUT)" >&2
  elif [ "$rc" != 0 ]; then
    status=failed
    echo "   FAILED (exit $rc): $*" >&2
    tail -n 20 "$raw/$name.log" >&2
  fi
  if [ "$status" != ok ]; then failures=$((failures + 1)); fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$engine" "$depth" "$status" "$name.json" \
    "$vram" "$base" >> "$manifest"
}

declare -A labels_seen
index=0
for model in "${models[@]}"; do
  index=$((index + 1))
  # The file's name in the table; its place in the list keeps two files of one name apart.
  label=$(basename "$model" .gguf)
  if [ -n "${labels_seen[$label]:-}" ]; then label=$label-$index; fi
  labels_seen[$label]=1
  ls -l "$model"
  for depth in "${depths[@]}"; do
    run_step "$label" hostlm "$depth" "$hostlm" bench "$model" --backend "$backend" \
      -p "$n_prompt" -n "$n_gen" -d "$depth" -r "$reps" -o json
    if [ -n "$llama_bin" ]; then
      # shellcheck disable=SC2086  # LLAMA_ARGS is a list of options
      LD_LIBRARY_PATH=$llama_ld_path run_step "$label" llama "$depth" "$llama_bin/llama-bench" \
        -m "$model" -p "$n_prompt" -n "$n_gen" -d "$depth" -r "$reps" -o json $llama_args
    fi
  done
done

version=$("$hostlm" --version 2>&1 | sed -n 1p)  # "hostlm X.Y.Z (commit ...)"
llama_run="not run (no LLAMA_BIN)"
if [ -n "$llama_bin" ]; then llama_run="$llama_bin/llama-bench $llama_args"; fi
{
  echo "# hostlm beside llama.cpp: pp$n_prompt / tg$n_gen"
  echo
  echo "$(date -u +%F), $version, --backend $backend, REPS=$reps; llama.cpp: $llama_run."
  if [ $smi = 1 ]; then
    echo "GPU: $(nvidia-smi -i "$gpu" --query-gpu=name,memory.total,driver_version --format=csv,noheader)."
  fi
  echo
  python3 "$root/tools/device/bench_compare_table.py" "$manifest" --n-prompt "$n_prompt" \
    --n-gen "$n_gen" --json "$results/summary.json"
} > "$results/summary.md"
cat "$results/summary.md"
printf '== [%5ds] done: %s (raw reports in %s)\n' $((SECONDS - start)) "$results/summary.md" "$raw"
if [ "$failures" -gt 0 ]; then
  echo "$failures step(s) failed or timed out: see the table" >&2
  exit 3
fi
