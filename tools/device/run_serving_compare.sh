#!/usr/bin/env bash
# Serving side by side (issue 6): `hostlm serve` and, when LLAMA_BIN is given, llama.cpp's
# llama-server on the same GGUF file, each driven by the same client
# (tools/device/serving_load.py: N concurrent streams of random NPROMPT-token prompts, NGEN
# tokens each, over /v1/completions with streaming). Prints one table per server and a
# ratio table, and writes them (summary.md) with the raw rows (*.json) to $RESULTS.
#
#   tools/device/run_serving_compare.sh MODEL.gguf [BUILD_DIR]     (default BUILD_DIR: build)
#
# Environment, all optional:
#   STREAMS=1,8,32,64   NPROMPT=512   NGEN=128   VOCAB=200000 (prompt ids are drawn below it)
#   BACKEND=cuda        (cpu for a dry run on the tiny model)
#   LLAMA_BIN=DIR       llama.cpp's build/bin with llama-server (built outside the repo)
#   LLAMA_ARGS="..."    extra llama-server options (default: -ngl 99 -fa on --kv-unified)
#   PORT=18600          hostlm listens there, llama-server on PORT+1
#   PREFIX_TTFT=8192    also time a cached prefix of this many tokens plus PREFIX_NEW=32
#                       (serving_load.py --prefix-ttft; slots then hold that much too)
#   LLAMA_WAIT=0        seconds to wait for LLAMA_BIN/llama-server to appear (a build still
#                       running while hostlm is measured)
#   RESULTS=DIR         (default: $OUT when set, else /tmp/hostlm-serving-compare)
# Both servers get one slot per stream of the largest count and room for a whole request in
# each slot; any failing step stops the script with its line and the server's log.
set -Eeuo pipefail
trap 'echo "run_serving_compare.sh: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR

cd "$(dirname "$0")/../.."
root=$PWD
model=$(realpath "${1:?usage: run_serving_compare.sh MODEL.gguf [BUILD_DIR]}")
build=$(cd "${2:-build}" && pwd)
hostlm=$build/bin/hostlm
streams=${STREAMS:-1,8,32,64}
n_prompt=${NPROMPT:-512}
n_gen=${NGEN:-128}
vocab=${VOCAB:-200000}
backend=${BACKEND:-cuda}
llama_bin=${LLAMA_BIN:-}
llama_args=${LLAMA_ARGS:--ngl 99 -fa on --kv-unified}
port=${PORT:-18600}
results=${RESULTS:-${OUT:-/tmp/hostlm-serving-compare}}
mkdir -p "$results"
export LD_LIBRARY_PATH=$build/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
[ -x "$hostlm" ] || { echo "no $hostlm: build first" >&2; exit 1; }
max_streams=$(tr ',' '\n' <<< "$streams" | sort -n | tail -1)
prefix_ttft=${PREFIX_TTFT:-0}
prefix_new=${PREFIX_NEW:-32}
llama_wait=${LLAMA_WAIT:-0}
per_request=$((n_prompt + n_gen + 64))
[ "$prefix_ttft" -gt 0 ] && [ $((prefix_ttft + prefix_new + 64)) -gt $per_request ] &&
  per_request=$((prefix_ttft + prefix_new + 64))
load=(python3 "$root/tools/device/serving_load.py" --streams "$streams" --prompt-tokens "$n_prompt"
      --gen "$n_gen" --vocab "$vocab" --prefix-ttft "$prefix_ttft" --prefix-new "$prefix_new")
server_pid=

stop_server() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=
  fi
}
trap stop_server EXIT

# Waits until GET $1 answers 200, or the server has exited, or 600 s have passed.
wait_ready() {
  local url=$1 log=$2
  for _ in $(seq 1 1200); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
      echo "the server exited; its log:" >&2
      tail -30 "$log" >&2
      return 1
    fi
    if python3 -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('$url', timeout=2).status != 200)" 2>/dev/null; then
      return 0
    fi
    sleep 0.5
  done
  echo "no answer from $url after 600 s; log:" >&2
  tail -30 "$log" >&2
  return 1
}

echo "== hostlm serve ($backend), $max_streams slots of $per_request tokens"
"$hostlm" serve --no-store --backend "$backend" --host "127.0.0.1:$port" \
  --parallel "$max_streams" --ctx "$per_request" --max-queue $((4 * max_streams)) \
  > "$results/hostlm-serve.log" 2>&1 &
server_pid=$!
wait_ready "http://127.0.0.1:$port/v1/models" "$results/hostlm-serve.log"
"${load[@]}" --url "http://127.0.0.1:$port" --model "$model" --label hostlm \
  --json "$results/hostlm.json" --prefix-json "$results/hostlm-prefix.json" |
  tee "$results/hostlm.md"
# The engine's step counters (hostlm_step_*): what the accelerator waited per step for the host.
# (Python, not curl: the device machines' curl breaks on the libcurl that LD_LIBRARY_PATH
# puts first for hostlm.)
python3 - "http://127.0.0.1:$port/metrics" "$results/hostlm-metrics.txt" <<'PY' || true
import sys, urllib.request
text = urllib.request.urlopen(sys.argv[1], timeout=10).read().decode()
open(sys.argv[2], "w").write(text)
m = {}
for line in text.splitlines():
    parts = line.split()
    if len(parts) == 2 and not line.startswith("#"):
        m[parts[0]] = float(parts[1])
steps = m.get("hostlm_steps_total", 0)
if steps:
    print(f"hostlm steps: {steps:.0f}, per step {1e3 * m['hostlm_step_model_seconds_total'] / steps:.2f} ms "
          f"in the forward pass, {1e3 * m['hostlm_step_host_seconds_total'] / steps:.2f} ms outside it")
PY
stop_server

if [ -n "$llama_bin" ]; then
  for _ in $(seq 1 "$llama_wait"); do
    [ -x "$llama_bin/llama-server" ] && break
    sleep 1
  done
  [ -x "$llama_bin/llama-server" ] || { echo "LLAMA_BIN=$llama_bin: no llama-server" >&2; exit 1; }
  echo "== llama-server ($llama_args), $max_streams slots of $per_request tokens"
  # shellcheck disable=SC2086  # LLAMA_ARGS is a list of options
  "$llama_bin/llama-server" -m "$model" --host 127.0.0.1 --port $((port + 1)) \
    -np "$max_streams" -c $((max_streams * per_request)) $llama_args \
    > "$results/llama-server.log" 2>&1 &
  server_pid=$!
  wait_ready "http://127.0.0.1:$((port + 1))/health" "$results/llama-server.log"
  "${load[@]}" --url "http://127.0.0.1:$((port + 1))" --model "$(basename "$model")" \
    --label llama-server --json "$results/llama.json" --prefix-json "$results/llama-prefix.json" |
    tee "$results/llama.md"
  stop_server
fi

python3 - "$results" "$model" <<'EOF' | tee "$results/summary.md"
import json, pathlib, sys
results, model = pathlib.Path(sys.argv[1]), sys.argv[2]
ours = json.loads((results / "hostlm.json").read_text())
theirs = json.loads((results / "llama.json").read_text()) if (results / "llama.json").exists() else []
by_n = {r["streams"]: r for r in theirs}
print(f"# Serving side by side: {pathlib.Path(model).name}\n")
print("| streams | hostlm t/s aggregate | llama-server t/s aggregate | ratio | hostlm TTFT mean ms | llama-server TTFT mean ms |")
print("|---:|---:|---:|---:|---:|---:|")
fmt = lambda r, k: f"{r[k]:,.1f}" if r and k in r else "-"
for r in ours:
    t = by_n.get(r["streams"])
    ratio = f"{r['aggregate_ts'] / t['aggregate_ts']:.2f}" if t and "aggregate_ts" in t and "aggregate_ts" in r else "-"
    print(f"| {r['streams']} | {fmt(r, 'aggregate_ts')} | {fmt(t, 'aggregate_ts')} | {ratio} | "
          f"{fmt(r, 'ttft_mean_ms')} | {fmt(t, 'ttft_mean_ms')} |")
prefix = [(name, json.loads((results / f).read_text()))
          for name, f in (("hostlm", "hostlm-prefix.json"), ("llama-server", "llama-prefix.json"))
          if (results / f).exists()]
if prefix:
    print("\n| server | cached prefix | new tokens | cold prefix ms (each) | TTFT ms, prefix cached (each) | tokens reused (each) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, rows in prefix:
        each = lambda k: " / ".join("-" if r.get(k) is None else f"{r[k]:,.1f}" if isinstance(r[k], float) else str(r[k]) for r in rows)
        print(f"| {name} | {rows[0]['prefix']} | {rows[0]['new']} | {each('cold_ms')} | "
              f"{each('cached_ttft_ms')} | {each('reused')} |")
EOF
