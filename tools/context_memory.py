#!/usr/bin/env python3
"""Memory a Qwen3.5 model needs per context length, from the formulas of shared/spec/qwen35.md,
and what `hostlm serve` allocates for it, checked against hostlm itself.

KV cache: only the full-attention layers keep one; per token and layer it holds K and V,
Nkv * D values each. Recurrent state: per sequence and Gated DeltaNet layer, the conv state
(Kc - 1) x CD and the delta-rule state Hv x dk x dv, both float32, independent of the context.
Weights: the bytes of every tensor of the shape files tools/make_shape_gguf.py writes, which
have the per-tensor types `hostlm quantize` gives each scheme (so exact for the K-quant
mixtures too; the tied sizes store their embeddings once).

What `hostlm serve --parallel P --ctx N` allocates (host/src/engine/memory_plan.cpp, the plan
it prints at load): the weights; a KV pool of pages of 32 tokens, P * ceil(N / 32) for the
running sequences plus a quarter of that (at most 1 GiB, at least 64 pages; on a GPU none
when the running contexts hold 65,536 tokens or more) for the prefix cache; recurrent
state for the P running sequences plus max(2, min(4P, 1 GiB / state)) prefix-cache
snapshots (2P instead of 4P on a GPU when N is 65,536 or more); and the activations of one
step of B tokens, 4 bytes x (4 B W + 3 B H + min(P, 64) V), W the widest projection (B is 256
on the CPU; on a GPU 2048, or 512 when N is 65,536 or more, else 4096 when P is 32 or more; the
logits buffer has a row per sequence decoded together).

    python3 tools/context_memory.py              # the README table (F16 KV, one sequence)
    python3 tools/context_memory.py --plan 27b --ctx 262144 [--type Q4_K_M] [--parallel 1] \\
        [--backend cpu|cuda]
    python3 tools/context_memory.py --check MODEL.gguf --ctx 4096,32768 \\
        --hostlm build/bin/hostlm [--backend cpu|cuda] [--fill TOKENS] [--json OUT.json]

--check loads MODEL in `hostlm serve` once per context (one short request), and prints the
plan hostlm printed beside the one computed here from the file's metadata and tensors, and
what the process really holds: on the CPU its virtual size (VmSize: every allocation, touched
or not) and resident set (VmRSS) over the idle server's; on CUDA the GPU memory it uses
(nvidia-smi) over the baseline before it started. --fill T sends a second prompt of about T
tokens three times (at the largest context) and reports how much resident memory the third
added per prompt token (CPU: KV pages are only touched as tokens arrive). It exits 3 when
hostlm's printed plan differs from the computed one.
"""
import argparse
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import gguf
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import make_shape_gguf  # noqa: E402  (the released shapes and the per-tensor type rules)

GIB, MIB = 1024**3, 1024**2
PAGE_TOKENS = 32
SERVE_BATCH = 256  # hostlm serve's tokens per step on the CPU (ModelLoadOptions::max_batch)
SERVE_BATCH_GPU = 2048  # and on a GPU backend
SERVE_BATCH_GPU_LONG = 512  # on a GPU backend for windows of LONG_WINDOW_TOKENS or more
SERVE_BATCH_GPU_MANY = 4096  # on a GPU backend for MANY_SEQUENCES or more (shorter windows)
MANY_SEQUENCES = 32  # kManySequences (host/include/hostlm/model_loader.h)
LONG_WINDOW_TOKENS = 65536  # kLongWindowTokens (plugin_api.h)
NO_RESERVE_TOKENS = 65536  # a GPU's running contexts from which the cache gets no reserve
KV_BYTES = {"F16": 2.0, "Q8_0": 34 / 32, "F32": 4.0}
README_SIZES = {"0.8B": "0.8b", "2B": "2b", "4B": "4b", "9B": "9b", "27B": "27b"}
CONTEXTS = [8192, 32768, 131072, 262144]
SCHEMES = ["BF16", "Q8_0", "Q4_K_M"]


def shape_facts(size):
    """The dimensions the memory depends on, for a make_shape_gguf size name."""
    s = make_shape_gguf.SIZES[size]
    L = s["layers"]
    full = sum(1 for i in range(L) if (i + 1) % make_shape_gguf.INTERVAL == 0)
    dk = dv = s["dk"]
    return dict(full=full, gdn=L - full, nkv=s["n_head_kv"], d=s["head_dim"], nq=s["n_head"],
                hk=s["k_heads"], hv=s["v_heads"], dk=dk, dv=dv, kc=make_shape_gguf.CONV_K,
                cd=2 * s["k_heads"] * dk + s["v_heads"] * dv, h=s["hidden"], ffn=s["ffn"],
                vocab=s["vocab"])


def shape_weight_bytes(size, scheme):
    """Bytes of every tensor of the shape file of this size and type."""
    plan = make_shape_gguf.tensor_plan(make_shape_gguf.SIZES[size], np.random.default_rng(0))
    types = make_shape_gguf.choose_types([(n, sh) for n, sh, _ in plan],
                                         make_shape_gguf.SIZES[size]["layers"], scheme)
    total = 0
    for (name, shape, _), t in zip(plan, types):
        n = int(np.prod(shape))
        if t is None:
            total += 4 * n
        else:
            block, bytes_ = gguf.GGML_QUANT_SIZES[t]
            total += n // block * bytes_
    return total


def kv_bytes_per_token(f, kv="F16"):
    return f["full"] * 2 * f["nkv"] * f["d"] * KV_BYTES[kv]


def recurrent_bytes(f, state="F32"):
    """Conv state (float32) plus delta-rule state, stored as float32 or 16 bits (--state-type)."""
    per_value = 4 if state == "F32" else 2
    return f["gdn"] * ((f["kc"] - 1) * f["cd"] * 4 + f["hv"] * f["dk"] * f["dv"] * per_value)


def serve_plan(f, weights, ctx, parallel=1, kv="F16", gpu=False, state_type="F32"):
    """The plan hostlm's engine makes (host/src/engine/memory_plan.cpp), in bytes."""
    batch = (SERVE_BATCH if not gpu else
             SERVE_BATCH_GPU_LONG if ctx >= LONG_WINDOW_TOKENS else
             SERVE_BATCH_GPU_MANY if parallel >= MANY_SEQUENCES else SERVE_BATCH_GPU)
    page = int(kv_bytes_per_token(f, kv) * PAGE_TOKENS)
    running = parallel * -(-ctx // PAGE_TOKENS)
    no_reserve = gpu and running * PAGE_TOKENS >= NO_RESERVE_TOKENS
    pages = running + (0 if no_reserve else max(64, min(running // 4, GIB // page)))
    state = recurrent_bytes(f, state_type)
    per_sequence = 2 if gpu and ctx >= LONG_WINDOW_TOKENS else 4
    snapshots = max(2, min(per_sequence * parallel, GIB // max(state, 1)))
    heads, kv, vd = f["nq"] * f["d"], f["nkv"] * f["d"], f["hv"] * f["dv"]
    widths = (max(2 * heads, f["cd"], f["ffn"]), max(heads, kv, f["cd"], f["ffn"]),
              max(heads, kv, vd + 2 * f["hv"]), max(heads, vd))  # modules::scratch_widths
    scratch = 4 * (batch * sum(widths) + 3 * batch * f["h"] + min(max(parallel, 1), 64) * f["vocab"])
    plan = dict(weights=weights, kv=page * pages, kv_pages=pages, state=state * (parallel + snapshots),
                scratch=scratch)
    plan["total"] = sum(plan[k] for k in ("weights", "kv", "state", "scratch"))
    return plan


def readme_table():
    print("| size | weights BF16 / Q8_0 / Q4_K_M (GiB) | KV F16 per 1K tokens (MiB) | "
          "recurrent state per sequence (MiB) | " +
          " | ".join(f"KV at {c // 1024}K (GiB)" for c in CONTEXTS) +
          " | `hostlm serve` at 256K on a GPU, Q4_K_M (GiB) |")
    print("|---" * (5 + len(CONTEXTS)) + "|")
    for name, size in README_SIZES.items():
        f = shape_facts(size)
        weights = {t: shape_weight_bytes(size, t) for t in SCHEMES}
        w = " / ".join(f"{weights[t] / GIB:.1f}" for t in SCHEMES)
        kv = kv_bytes_per_token(f)
        cols = " | ".join(f"{kv * c / GIB:.2f}" for c in CONTEXTS)
        serve = serve_plan(f, weights["Q4_K_M"], 262144, gpu=True)["total"]
        print(f"| {name} | {w} | {kv * 1024 / MIB:.0f} | {recurrent_bytes(f) / MIB:.1f} | {cols} | "
              f"{serve / GIB:.1f} |")


# ---- --check: against hostlm --------------------------------------------------------------

def gguf_facts(path):
    """shape_facts and the tensor bytes of a Qwen3.5 GGUF file."""
    r = gguf.GGUFReader(path)

    def get(key, default=None):
        field = r.fields.get(f"qwen35.{key}")
        if field is None:
            if default is None:
                sys.exit(f"{path}: no qwen35.{key}")
            return default
        return int(field.parts[field.data[0]][0])

    L, interval = get("block_count"), get("full_attention_interval", 4)
    full = sum(1 for i in range(L) if (i + 1) % interval == 0)
    hk, dk, hv, vd = get("ssm.group_count"), get("ssm.state_size"), get("ssm.time_step_rank"), get("ssm.inner_size")
    vocab = next(t.shape for t in r.tensors if t.name == "token_embd.weight")[1]
    f = dict(full=full, gdn=L - full, nkv=get("attention.head_count_kv"), d=get("attention.key_length"),
             nq=get("attention.head_count"), hk=hk, hv=hv, dk=dk, dv=vd // hv, kc=get("ssm.conv_kernel"),
             cd=2 * hk * dk + vd, h=get("embedding_length"), ffn=get("feed_forward_length"), vocab=int(vocab))
    return f, sum(int(t.n_bytes) for t in r.tensors)


PLAN_LABELS = {"weights": "weights", "kv": "KV cache", "state": "recurrent state", "scratch": "scratch",
               "total": "total"}


def parse_plan(text):
    """The memory plan hostlm printed (MemoryPlan::describe): each item as printed ("3.8 GiB"),
    the KV page count and the block itself."""
    plan = {"printed": {}}
    for key, label in PLAN_LABELS.items():
        m = re.search(rf"^  {re.escape(label)}\s+([\d.]+ (?:B|KiB|MiB|GiB|TiB))", text, re.M)
        if m:
            plan["printed"][key] = m.group(1)
    m = re.search(r"KV cache .*?(\d+) pages:", text)
    if m:
        plan["kv_pages"] = int(m.group(1))
    block = re.search(r"^hostlm: memory for .*?(?:\n  .*)+", text, re.M)
    plan["text"] = block.group(0) if block else ""
    return plan


def proc_status(pid):
    out = {}
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmSize", "VmRSS", "VmHWM", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out


def gpu_used_mib():
    gpu = os.environ.get("HOSTLM_GPU", "0")
    out = subprocess.run(["nvidia-smi", "-i", gpu, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                         capture_output=True, text=True, check=True).stdout
    return int(out.split()[0])


def http(port, path, body=None, timeout=3600):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        return json.loads(r.read())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prompt_text(n_words, salt=0):
    words = ["river", "stone", "garden", "music", "paper", "window", "light", "table", "summer", "road"]
    return " ".join(words[(i * 7 + salt) % len(words)] + str((i + 13 * salt) % 97) for i in range(n_words))


def serve_once(args, ctx, fill):
    """Loads the model in `hostlm serve` at this context; returns hostlm's plan and the memory
    the process held: idle, after one short request, and (fill > 0) after each of three
    prompts of about `fill` tokens (the first two touch the whole step scratch and every
    snapshot slot, so the third adds only its KV pages)."""
    port = free_port()
    log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)
    cuda = args.backend == "cuda"
    base_gpu = gpu_used_mib() if cuda else None
    cmd = [args.hostlm, "serve", "--no-store", "--parallel", "1", "--ctx", str(ctx), "--backend", args.backend,
           "--host", f"127.0.0.1:{port}", "--keep-alive", "-1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
    result = dict(ctx=ctx)

    def generate(prompt):
        return http(port, "/api/generate", {"model": str(args.model), "prompt": prompt, "raw": True, "stream": False,
                                            "options": {"num_predict": 1, "temperature": 0}})
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"hostlm serve exited ({proc.returncode}) before answering")
            try:
                http(port, "/api/version", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("hostlm serve did not answer in 60 s")
                time.sleep(0.1)
        idle = proc_status(proc.pid)
        started = time.monotonic()
        first = generate(prompt_text(8))
        result["load_s"] = time.monotonic() - started
        result["process"] = {"idle": idle, "loaded": proc_status(proc.pid)}
        if cuda:
            result["gpu_mib"] = {"baseline": base_gpu, "loaded": gpu_used_mib()}
        if fill:
            # Words of the filler text take a few tokens each; scaled from the first prompt.
            words = max(1, round(fill * 8 / max(1, first.get("prompt_eval_count") or 8)))
            result["fill"] = []
            for salt in (1, 2, 3):
                r = generate(prompt_text(words, salt))
                result["fill"].append({"tokens": r.get("prompt_eval_count"), "process": proc_status(proc.pid)})
    except Exception:
        log.seek(0)
        sys.stderr.write(log.read()[-4000:])
        raise
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    log.seek(0)
    result["hostlm_plan"] = parse_plan(log.read())
    os.unlink(log.name)
    if not result["hostlm_plan"]["text"]:
        raise RuntimeError("hostlm serve printed no memory plan")
    return result


def human(n):
    """hostlm's rendering of a byte count (engine_stats.cpp), for comparing with its plan."""
    v, u = float(n), 0
    while v >= 1024 and u < 4:
        v /= 1024
        u += 1
    unit = ["B", "KiB", "MiB", "GiB", "TiB"][u]
    return f"{v:.0f} {unit}" if u == 0 else f"{v:.1f} {unit}"


def mib(x):
    return f"{x / MIB:,.1f}"


def check(args):
    facts, weights = gguf_facts(args.model)
    rows = []
    for ctx in args.ctx:
        r = serve_once(args, ctx, args.fill if ctx == max(args.ctx) else 0)
        on_gpu = " on cpu " not in r["hostlm_plan"]["text"]
        r["formula_plan"] = serve_plan(facts, weights, ctx, gpu=on_gpu)
        rows.append(r)
        print(r["hostlm_plan"]["text"], file=sys.stderr)
    print(f"{args.model} on {args.backend}, `hostlm serve --parallel 1 --ctx N`\n")
    print("| ctx | item | computed here | hostlm printed |\n|---:|---|---:|---:|")
    agree = True
    for r in rows:
        f, h = r["formula_plan"], r["hostlm_plan"]
        for key in ("weights", "kv", "state", "scratch", "total"):
            printed = h["printed"].get(key, "missing")
            same = human(f[key]) == printed
            agree &= same
            print(f"| {r['ctx']} | {key} | {human(f[key])} | {printed}{'' if same else ' (differs)'} |")
        same = f["kv_pages"] == h.get("kv_pages")
        agree &= same
        print(f"| {r['ctx']} | KV pages | {f['kv_pages']} | {h.get('kv_pages')}{'' if same else ' (differs)'} |")
    print(f"\nhostlm's printed plan {'equals' if agree else 'DIFFERS FROM'} the one computed here.\n")
    print("| ctx | VmSize over idle (MiB) | plan total (MiB) | VmRSS over idle (MiB) | GPU over baseline (MiB) |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        p = r["process"]
        gpu = r.get("gpu_mib")
        print(f"| {r['ctx']} | {mib(p['loaded']['VmSize'] - p['idle']['VmSize'])} | {mib(r['formula_plan']['total'])} | "
              f"{mib(p['loaded']['VmRSS'] - p['idle']['VmRSS'])} | "
              f"{gpu['loaded'] - gpu['baseline'] if gpu else '-'} |")
    if len(rows) > 1:
        print("\n| contexts | VmSize growth (MiB) | planned KV growth (MiB) |\n|---|---:|---:|")
        for a, r in zip(rows, rows[1:]):
            grow = r["process"]["loaded"]["VmSize"] - a["process"]["loaded"]["VmSize"]
            print(f"| {a['ctx']} -> {r['ctx']} | {mib(grow)} | {mib(r['formula_plan']['kv'] - a['formula_plan']['kv'])} |")
    filled = next((r for r in rows if r.get("fill")), None)
    if filled:
        fill = filled["fill"]
        added = fill[2]["process"]["VmRSS"] - fill[1]["process"]["VmRSS"]
        n = fill[2]["tokens"] or 1
        print(f"\nA third prompt of {n} tokens (ctx {filled['ctx']}) added {mib(added)} MiB resident: "
              f"{added / n / 1024:,.2f} KiB per token; KV per token by the formula: "
              f"{kv_bytes_per_token(facts) / 1024:,.2f} KiB.")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if agree else 3


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plan", choices=sorted(make_shape_gguf.SIZES), help="print hostlm serve's plan for a size")
    ap.add_argument("--type", choices=SCHEMES + ["F16"], default="Q4_K_M")
    ap.add_argument("--parallel", type=int, default=1)
    ap.add_argument("--state-type", choices=["F32", "F16", "BF16"], default="F32",
                    help="--plan: the recurrent states' element type (hostlm's --state-type)")
    ap.add_argument("--check", dest="model", type=pathlib.Path, help="a GGUF to load in hostlm serve")
    ap.add_argument("--ctx", type=lambda s: [int(x) for x in s.split(",")], default=[262144])
    ap.add_argument("--hostlm", default=str(pathlib.Path(__file__).resolve().parents[1] / "build" / "bin" / "hostlm"))
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "auto"])
    ap.add_argument("--fill", type=int, default=0, help="--check: also send a prompt of about this many tokens")
    ap.add_argument("--json", help="--check: write every measurement here")
    args = ap.parse_args()
    if args.model:
        return check(args)
    elif args.plan:
        f = shape_facts(args.plan)
        w = shape_weight_bytes(args.plan, args.type)
        for ctx in args.ctx:
            gpu = args.backend == "cuda"
            p = serve_plan(f, w, ctx, args.parallel, gpu=gpu, state_type=args.state_type)
            print(f"{args.plan} {args.type}, {args.parallel} x {ctx} tokens: " +
                  ", ".join(f"{k} {p[k] / GIB:.2f} GiB" for k in ("weights", "kv", "state", "scratch", "total")))
    else:
        readme_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
