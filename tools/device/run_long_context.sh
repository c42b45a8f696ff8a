#!/usr/bin/env bash
# The long-context run of issues 11 and 5 on the lent GPU machine: the 27B shape in Q4_K_M
# with its full 262,144-token window, beside llama.cpp when one is given.
#   1. file:   the random-weight GGUF of the shape, written directly in Q4_K_M
#              (tools/make_shape_gguf.py --type Q4_K_M: about a minute for 27B, 15.4 GiB);
#   2. plan:   `hostlm serve --parallel 1 --ctx CTX` loads it: the memory plan hostlm prints,
#              beside the one tools/context_memory.py computes, and the GPU memory the loaded
#              server holds (tools/context_memory.py --check);
#   3. hostlm: `hostlm bench --parallel 1 -p CTX-NGEN -n NGEN [-b BATCH]` through the engine as
#              `hostlm serve` runs it (paged F16 KV, prefix cache): the time to first token
#              is the prefill of the whole window, then NGEN tokens generated after it;
#   4. llama:  with LLAMA_BIN=DIR, DIR/llama-bench on the same file (-ngl 99 -fa 1, its
#              default -b 2048 -ub 512, F16 KV): pp CTX (no warm-up: llama-bench's warm-up
#              would prefill the whole window twice) and tg NGEN @ d(CTX-NGEN), each in a
#              context of CTX tokens.
# Peak GPU memory of steps 3 and 4 is sampled by nvidia-smi every POLL_MS in the background
# (with BACKEND=cpu: the process's peak resident set, VmHWM). Writes summary.md and every raw
# report (raw/) to $RESULTS; any failing step stops the script with its line and log.
#
#   tools/device/run_long_context.sh [BUILD_DIR]        (default: build)
#
# BUILD_DIR holds a build with CUDA on (bin/hostlm, lib/, manifests/, hostlm-build-tree.json).
# Environment, all optional:
#   SIZE=27b        shape (tools/make_shape_gguf.py sizes: 0.8b 2b 4b 9b 27b test256)
#   CTX=262144      context       NGEN=32    BATCH=N (hostlm tokens per engine step; default
#                   hostlm's own: 512 for windows of 65,536 tokens or more)
#   BACKEND=cuda    (cpu for a dry run: BACKEND=cpu SIZE=test256 CTX=4096)
#   LLAMA_BIN=DIR   llama.cpp's build/bin (llama-bench), built with CUDA
#   STEPS="file plan hostlm llama"   the steps to run; measurements of earlier runs on the
#                   same machine (in WORK) are kept, so a run can be split across commands
#   WORK=DIR        files and raw reports (default /tmp/hostlm-long-context; the GGUF is reused)
#   RESULTS=DIR     summary and raw copies (default: $OUT when set, else $WORK/results)
#   POLL_MS=200     memory sampling period     STEP_TIMEOUT=1500  seconds before a step is stopped
#   GPU=0           the nvidia-smi index to sample
set -Eeuo pipefail
trap 'echo "run_long_context.sh: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR

cd "$(dirname "$0")/../.."
root=$PWD
build=$(cd "${1:-build}" && pwd)
hostlm=$build/bin/hostlm
size=${SIZE:-27b}
ctx=${CTX:-262144}
n_gen=${NGEN:-32}
batch=${BATCH:-}
backend=${BACKEND:-cuda}
llama_bin=${LLAMA_BIN:-}
steps=" ${STEPS:-file plan hostlm llama} "
work=${WORK:-/tmp/hostlm-long-context}
results=${RESULTS:-${OUT:-$work/results}}
poll_ms=${POLL_MS:-200}
step_timeout=${STEP_TIMEOUT:-1500}
gpu=${GPU:-0}
model=$work/$size-q4_k_m.gguf
raw=$work/raw-$size-$ctx-$backend  # kept between runs; copied to $results/raw
mkdir -p "$work" "$results" "$raw"
[ -x "$hostlm" ] || { echo "no $hostlm: build first (cmake --build $build)" >&2; exit 1; }
if [ "$n_gen" -lt 1 ] || [ "$ctx" -le "$n_gen" ]; then echo "need CTX > NGEN >= 1" >&2; exit 1; fi
# The file step and the summary read GGUF with the gguf package: checked before any step runs,
# so a long run does not end in a traceback after its measurements.
python3 -c "import gguf" 2> /dev/null ||
  { echo "run_long_context.sh needs the gguf Python package (pip install gguf, or its gguf-py folder on PYTHONPATH)" >&2; exit 1; }
if [ -n "$llama_bin" ]; then
  [ -x "$llama_bin/llama-bench" ] || { echo "LLAMA_BIN=$llama_bin: no llama-bench there" >&2; exit 1; }
fi
# llama-bench runs with the caller's library path (its build finds its own libraries).
llama_ld_path=${LD_LIBRARY_PATH:-}
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
poll_s=$(awk -v ms="$poll_ms" 'BEGIN { printf "%.3f", ms / 1000 }')
"$hostlm" --version
if [ "$backend" = cuda ]; then
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
fi
start=$SECONDS
step() { printf '\n== [%4ds] %s\n' $((SECONDS - start)) "$*"; }
has_step() { [[ $steps == *" $1 "* ]]; }

# run_step NAME CMD...: runs CMD, stdout to $raw/NAME.json, stderr to $raw/NAME.log, while
# sampling memory: the GPU's (nvidia-smi -lms, to NAME.vram, the baseline before it in
# NAME.base) or the process's peak resident set (NAME.hwm_kib); its seconds in NAME.seconds.
# Stops it after STEP_TIMEOUT seconds; a failure prints the log's tail and ends the script.
run_step() {
  local name=$1
  shift
  local smi_pid="" hwm=0 rc=0 t0=$SECONDS v
  rm -f "$raw/$name".*
  if [ "$backend" = cuda ]; then
    nvidia-smi -i "$gpu" --query-gpu=memory.used --format=csv,noheader,nounits > "$raw/$name.base"
    nvidia-smi -i "$gpu" --query-gpu=memory.used --format=csv,noheader,nounits -lms "$poll_ms" \
      > "$raw/$name.vram" &
    smi_pid=$!
  fi
  "$@" > "$raw/$name.json" 2> "$raw/$name.log" &
  local pid=$!
  while [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null; do
    v=$(awk '/^VmHWM:/ { print $2 }' "/proc/$pid/status" 2>/dev/null || true)
    if [ -n "$v" ] && [ "$v" -gt "$hwm" ]; then hwm=$v; fi
    if [ $((SECONDS - t0)) -gt "$step_timeout" ]; then
      echo "$name: still running after $step_timeout s (STEP_TIMEOUT): stopped" >&2
      kill "$pid" 2>/dev/null || true
    fi
    sleep "$poll_s"
  done
  wait "$pid" || rc=$?
  if [ -n "$smi_pid" ]; then
    kill "$smi_pid" 2>/dev/null || true
    wait "$smi_pid" 2>/dev/null || true
  fi
  echo "$hwm" > "$raw/$name.hwm_kib"
  echo $((SECONDS - t0)) > "$raw/$name.seconds"
  if [ "$rc" != 0 ]; then
    echo "$name FAILED (exit $rc): $*" >&2
    tail -n 40 "$raw/$name.log" >&2
    exit 1
  fi
}

# ---- 1. the file ------------------------------------------------------------------------
if has_step file && [ ! -s "$model" ]; then
  step "$size: writing the Q4_K_M shape file directly"
  python3 tools/make_shape_gguf.py "$size" "$model.part" --type Q4_K_M
  mv "$model.part" "$model"
fi
[ -s "$model" ] || { echo "no $model: run the file step (STEPS=file)" >&2; exit 1; }
ls -l "$model"

# ---- 2. the memory plan -------------------------------------------------------------------
if has_step plan; then
  step "$size Q4_K_M: what hostlm serve plans and holds for $ctx tokens ($backend)"
  python3 tools/context_memory.py --plan "$size" --ctx "$ctx" | tee "$raw/plan-computed.txt"
  rc=0
  python3 tools/context_memory.py --check "$model" --ctx "$ctx" --hostlm "$hostlm" \
    --backend "$backend" --json "$raw/plan.json" > "$raw/plan.md" 2> "$raw/plan.log" || rc=$?
  cat "$raw/plan.log" "$raw/plan.md"
  if [ "$rc" = 3 ]; then
    echo "WARNING: hostlm's printed plan differs from tools/context_memory.py's (see above)" >&2
  elif [ "$rc" != 0 ]; then
    echo "plan step FAILED (exit $rc)" >&2
    exit 1
  fi
fi

# ---- 3. hostlm: prefill of the whole window, then generation ------------------------------
if has_step hostlm; then
  step "hostlm: prefill of $((ctx - n_gen)) tokens in steps of ${batch:-the default}, then $n_gen generated ($backend)"
  run_step hostlm-bench "$hostlm" bench "$model" --backend "$backend" --parallel 1 \
    -p $((ctx - n_gen)) -n "$n_gen" ${batch:+-b "$batch"} -o json
  cat "$raw/hostlm-bench.json"
fi

# ---- 4. llama.cpp -------------------------------------------------------------------------
if has_step llama && [ -n "$llama_bin" ]; then
  step "llama.cpp: pp$ctx"
  LD_LIBRARY_PATH=$llama_ld_path run_step llama-pp "$llama_bin/llama-bench" -m "$model" \
    -ngl 99 -fa 1 -p "$ctx" -n 0 -r 1 --no-warmup -o json -v
  step "llama.cpp: tg$n_gen @ d$((ctx - n_gen))"
  LD_LIBRARY_PATH=$llama_ld_path run_step llama-tg "$llama_bin/llama-bench" -m "$model" \
    -ngl 99 -fa 1 -p 0 -n "$n_gen" -d $((ctx - n_gen)) -r 1 -o json -v
elif has_step llama; then
  echo "llama.cpp: no LLAMA_BIN given; skipped"
fi

# ---- the summary --------------------------------------------------------------------------
step "summary"
if ! compgen -G "$raw/*" > /dev/null; then
  echo "no measurements yet (STEPS=\"$steps\"): nothing to summarise"
  exit 0
fi
mkdir -p "$results/raw"
cp "$raw"/* "$results/raw/"
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || "$hostlm" --version)
python3 - "$raw" "$results" "$model" "$size" "$ctx" "$n_gen" "$batch" "$backend" "$commit" <<'EOF' | tee "$results/summary.md"
import datetime, json, pathlib, re, subprocess, sys
import gguf
raw, results, model = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3])
size, ctx, n_gen, batch, backend, commit = sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7], sys.argv[8], sys.argv[9]
GIB = 1024**3

def load(name):
    p = raw / name
    return json.loads(p.read_text()) if p.exists() and p.stat().st_size else None

def peak(name):
    """(peak, over the baseline) in GiB: GPU memory on CUDA, the peak resident set on the CPU."""
    vram = raw / f"{name}.vram"
    if vram.exists():
        samples = [int(x) for x in vram.read_text().split() if x.strip().isdigit()]
        base = int((raw / f"{name}.base").read_text().split()[0])
        if samples:
            return max(samples) / 1024, (max(samples) - base) / 1024
        return None
    hwm = raw / f"{name}.hwm_kib"
    return (int(hwm.read_text()) / 1024**2,) * 2 if hwm.exists() else None

def mem_text(name):
    m = peak(name)
    return "-" if m is None else f"{m[1]:.2f}" + ("" if backend != "cuda" else f" (GPU total {m[0]:.2f})")

reader = gguf.GGUFReader(model)
kinds = {}
for t in reader.tensors:
    kinds[t.tensor_type.name] = kinds.get(t.tensor_type.name, 0) + int(t.n_bytes)
gpu = "cpu"
if backend == "cuda":
    gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip()
print(f"# Long context: {size} Q4_K_M, {ctx:,} tokens\n")
print(f"{datetime.date.today()}, commit {commit}, {gpu}. File {model.name}: {model.stat().st_size / GIB:.2f} GiB (" +
      ", ".join(f"{k} {v / GIB:.2f} GiB" for k, v in sorted(kinds.items())) + "), random weights of the real shape.\n")

plan = load("plan.json")
if plan:
    r = plan[0]
    print("## Memory plan (`hostlm serve --parallel 1 --ctx %d`)\n" % ctx)
    print("```\n" + r["hostlm_plan"]["text"].rstrip() + "\n```\n")
    md = (raw / "plan.md").read_text()
    verdict = re.search(r"hostlm's printed plan .*", md)
    print(f"{verdict.group(0) if verdict else ''} Load and first request: {r.get('load_s', 0):.1f} s." +
          (f" GPU memory of the loaded server: {(r['gpu_mib']['loaded'] - r['gpu_mib']['baseline']) / 1024:.2f} GiB "
           f"over the {r['gpu_mib']['baseline'] / 1024:.2f} GiB before it started "
           f"(plan total {r['formula_plan']['total'] / GIB:.2f} GiB)." if r.get("gpu_mib") else
           f" Resident set of the loaded server over the idle one: "
           f"{(r['process']['loaded']['VmRSS'] - r['process']['idle']['VmRSS']) / GIB:.2f} GiB.") + "\n")

print("## Prefill of the whole window and generation after it\n")
print("| engine | settings | prefill tokens | prefill s | prefill t/s | generation t/s | " +
      ("peak GPU memory over baseline (GiB) |" if backend == "cuda" else "peak resident set (GiB) |"))
print("|---|---|---:|---:|---:|---:|---:|")
hb = load("hostlm-bench.json")
if hb:
    r = next(x for x in hb if x.get("test") == "streams")
    ttft_s = r["ttft_mean_ms"] / 1e3
    print(f"| hostlm ({r['backend'] if 'backend' in r else backend}) | engine, steps of {r.get('n_batch', batch)}, F16 KV, prefix cache | "
          f"{r['n_prompt']:,} | {ttft_s:,.1f} | {r['n_prompt'] / ttft_s:,.0f} | "
          f"{r['decode_ts']:,.1f} (tg{r['n_gen']} after the prompt) | {mem_text('hostlm-bench')} |")
pp, tg = load("llama-pp.json"), load("llama-tg.json")
if pp or tg:
    p = pp[0] if pp else None
    t = tg[0] if tg else None
    mem = [m for m in (peak("llama-pp"), peak("llama-tg")) if m]
    mem_s = "-" if not mem else f"{max(m[1] for m in mem):.2f}" + (
        f" (GPU total {max(m[0] for m in mem):.2f})" if backend == "cuda" else "")
    first = p or t
    print(f"| llama.cpp ({first['backends']}) | llama-bench -ngl 99 -fa 1 -b {first['n_batch']} -ub {first['n_ubatch']}, "
          f"KV {first['type_k']} | {p['n_prompt']:,} | {p['avg_ns'] / 1e9:,.1f} | {p['avg_ts']:,.0f} | "
          f"{t['avg_ts']:,.1f} (tg{t['n_gen']} @ d{t['n_depth']}) | {mem_s} |" if p and t else
          f"| llama.cpp | incomplete run: {'pp' if p else 'no pp'}, {'tg' if t else 'no tg'} | | | | | |")
    for name in ("llama-pp", "llama-tg"):
        log = raw / f"{name}.log"
        if log.exists():
            lines = [l.strip() for l in log.read_text(errors="replace").splitlines()
                     if re.search(r"buffer size|llama_kv_cache: size|model size", l)]
            if lines:
                print(f"\nllama.cpp's buffers ({name}):\n\n```\n" + "\n".join(dict.fromkeys(lines)) + "\n```")
print("\nPeak memory: nvidia-smi's memory.used sampled every POLL_MS during the step, less the value "
      "before it (CUDA); the process's peak resident set (CPU). Raw reports in raw/.")
EOF
step "done: summary and raw reports in $results"
