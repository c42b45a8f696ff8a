#!/usr/bin/env python3
"""The side-by-side table of tools/device/run_bench_compare.sh: `hostlm bench -o json` and
llama.cpp's `llama-bench -o json` on the same files and depths, as Markdown with ratios.

    bench_compare_table.py MANIFEST.tsv [--n-prompt 512] [--n-gen 128] [--json OUT.json]

MANIFEST.tsv has one line per step the script ran (one engine, one file, one depth), seven
tab-separated fields, paths relative to the manifest's folder:

    file  engine(hostlm|llama)  depth  status(ok|failed|timeout)  report.json  vram  vram_base

vram is the file of nvidia-smi memory.used samples (MiB, one a line) taken during the step,
vram_base the one sample before it, both "-" where there was no nvidia-smi. A step that failed
still contributes the rows its report holds (llama-bench prints each test as it ends); the
tests it lacks read "failed" or "timeout". Only the standard library is used."""

import argparse
import json
import math
import pathlib
import sys

ENGINES = ("hostlm", "llama")
STATUSES = ("ok", "failed", "timeout")


class ManifestError(Exception):
    pass


def read_manifest(path):
    """The steps, in the order they ran: dicts with the manifest's fields."""
    steps = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split("\t")
        where = f"{path}:{number}"
        if len(fields) != 7:
            raise ManifestError(f"{where}: {len(fields)} tab-separated fields, expected 7")
        name, engine, depth, status, report, vram, base = fields
        if engine not in ENGINES:
            raise ManifestError(f"{where}: engine '{engine}' is not one of {', '.join(ENGINES)}")
        if status not in STATUSES:
            raise ManifestError(f"{where}: status '{status}' is not one of {', '.join(STATUSES)}")
        if not depth.isdigit():
            raise ManifestError(f"{where}: depth '{depth}' is not a non-negative integer")
        steps.append({"file": name, "engine": engine, "depth": int(depth), "status": status,
                      "report": path.parent / report,
                      "vram": None if vram == "-" else path.parent / vram,
                      "vram_base": None if base == "-" else path.parent / base})
    return steps


def read_report(path):
    """(rows, problem): the report's test rows, and why there are none or fewer than printed.
    A llama-bench run that died mid-way leaves its JSON array unclosed: the tests it finished
    are kept."""
    try:
        text = path.read_text(errors="replace").strip()
    except OSError as e:
        return [], f"no report ({e.strerror})"
    if not text:
        return [], "empty report"
    try:
        rows = json.loads(text)
    except json.JSONDecodeError:
        try:
            rows = json.loads(text.rstrip(",") + "\n]")
        except json.JSONDecodeError as e:
            return [], f"not JSON (line {e.lineno}: {e.msg})"
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        return [], "not a JSON array of test objects"
    return rows, None


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def find_rate(rows, n_prompt, n_gen, depth):
    """avg_ts of the row for this test, or None."""
    for r in rows:
        if (r.get("n_prompt"), r.get("n_gen"), r.get("n_depth", 0)) == (n_prompt, n_gen, depth):
            return r["avg_ts"] if is_number(r.get("avg_ts")) else None
    return None


def vram_peak_mib(step):
    """The largest nvidia-smi sample of the step, or None."""
    if step is None or step["vram"] is None or not step["vram"].exists():
        return None
    samples = [int(x) for x in step["vram"].read_text().split() if x.isdigit()]
    return max(samples) if samples else None


def vram_base_mib(step):
    if step is None or step["vram_base"] is None or not step["vram_base"].exists():
        return None
    samples = [int(x) for x in step["vram_base"].read_text().split() if x.isdigit()]
    return samples[0] if samples else None


def fmt_rate(v):
    return f"{v:,.0f}" if v >= 1000 else f"{v:,.1f}"


def test_name(n_prompt, n_gen, depth):
    name = f"pp{n_prompt}" if n_prompt > 0 else f"tg{n_gen}"
    return name + (f" @ d{depth}" if depth > 0 else "")


def build_rows(steps, n_prompt, n_gen):
    """One row per file, depth and test, in the order the steps ran."""
    by_key, order = {}, []
    for s in steps:
        key = (s["file"], s["depth"])
        if key not in by_key:
            by_key[key] = {}
            order.append(key)
        by_key[key][s["engine"]] = s
    reports = {}
    rows = []
    tests = [(p, g) for p, g in ((n_prompt, 0), (0, n_gen)) if p > 0 or g > 0]
    for key in order:
        name, depth = key
        per_engine = by_key[key]
        for p, g in tests:
            row = {"file": name, "test": test_name(p, g, depth), "n_prompt": p, "n_gen": g,
                   "n_depth": depth}
            for engine in ENGINES:
                step = per_engine.get(engine)
                if step is None:
                    row[engine] = None  # not run (no LLAMA_BIN)
                    continue
                if step["report"] not in reports:
                    reports[step["report"]] = read_report(step["report"])
                found, problem = reports[step["report"]]
                rate = find_rate(found, p, g, depth)
                if rate is not None:
                    row[engine] = rate
                elif step["status"] != "ok":
                    row[engine] = step["status"]
                else:
                    row[engine] = problem or "missing"
            ours, theirs = row["hostlm"], row["llama"]
            row["ratio"] = ours / theirs if is_number(ours) and is_number(theirs) and theirs > 0 else None
            # hostlm's own figure (the device's memory in use at the fullest, as the CUDA
            # runtime reports it) and nvidia-smi's peak during each engine's step.
            hostlm_step, llama_step = per_engine.get("hostlm"), per_engine.get("llama")
            own = None
            if hostlm_step is not None:
                for r in reports[hostlm_step["report"]][0]:
                    if is_number(r.get("device_memory_used_peak")) and r.get("n_depth", 0) == depth:
                        own = r["device_memory_used_peak"] / 1048576
                        break
            row["hostlm_vram_mib"] = own
            row["hostlm_smi_mib"] = vram_peak_mib(hostlm_step)
            row["llama_smi_mib"] = vram_peak_mib(llama_step)
            rows.append(row)
    return rows, reports


def cell(v):
    if v is None:
        return "-"
    return fmt_rate(v) if is_number(v) else v


def mib_cell(own, smi):
    if own is None and smi is None:
        return "-"
    if own is None:
        return f"({smi:,})"
    return f"{own:,.0f}" + (f" ({smi:,})" if smi is not None else "")


def markdown(steps, rows, reports):
    out = ["| file | test | hostlm t/s | llama.cpp t/s | hostlm / llama.cpp | "
           "hostlm GPU MiB peak | llama.cpp GPU MiB peak |",
           "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = f"{r['ratio']:.2f}" if r["ratio"] is not None else "-"
        out.append(f"| {r['file']} | {r['test']} | {cell(r['hostlm'])} | {cell(r['llama'])} | "
                   f"{ratio} | {mib_cell(r['hostlm_vram_mib'], r['hostlm_smi_mib'])} | "
                   f"{'-' if r['llama_smi_mib'] is None else format(r['llama_smi_mib'], ',')} |")
    notes = ["", "t/s: the mean over the repetitions."]
    if any(r[k] is not None for r in rows for k in ("hostlm_vram_mib", "hostlm_smi_mib", "llama_smi_mib")):
        notes[-1] += (" GPU MiB: the whole device's memory in use at the fullest, CUDA contexts "
                      "included: for hostlm its own report (`device_memory_used_peak`), in "
                      "parentheses nvidia-smi's peak during its step; for llama.cpp nvidia-smi's "
                      "peak during its step (sampled every POLL_MS, so a short peak can be "
                      "missed). One step covers both tests of a depth.")
    bases = [b for b in (vram_base_mib(s) for s in steps) if b is not None]
    if bases:
        notes.append(f"GPU memory in use before the steps: {min(bases):,}-{max(bases):,} MiB.")
    seen = set()
    for s in steps:
        found = reports.get(s["report"], ([], None))[0]
        if not found:
            continue
        r = found[0]
        if s["engine"] == "llama" and "llama" not in seen:
            seen.add("llama")
            notes.append(f"llama.cpp: build {r.get('build_number', '?')} ({r.get('build_commit', '?')}), "
                         f"backends {r.get('backends', '?')}, {r.get('gpu_info') or r.get('cpu_info', '?')}, "
                         f"-ngl {r.get('n_gpu_layers', '?')}, flash_attn {r.get('flash_attn', '?')}, "
                         f"-b {r.get('n_batch', '?')} -ub {r.get('n_ubatch', '?')}, "
                         f"KV {r.get('type_k', '?')}/{r.get('type_v', '?')}.")
        if s["engine"] == "hostlm" and "hostlm" not in seen:
            seen.add("hostlm")
            notes.append(f"hostlm: backend {r.get('backend', '?')}, {r.get('n_threads', '?')} threads, "
                         f"batch {r.get('n_batch', '?')}.")
    failed = [s for s in steps if s["status"] != "ok"]
    for s in failed:
        notes.append(f"{s['engine']} on {s['file']} at depth {s['depth']}: {s['status']} "
                     f"(log: {s['report'].with_suffix('.log').name}).")
    return "\n".join(out + notes) + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest", type=pathlib.Path)
    ap.add_argument("--n-prompt", type=int, default=512)
    ap.add_argument("--n-gen", type=int, default=128)
    ap.add_argument("--json", type=pathlib.Path, help="also write the rows as JSON here")
    a = ap.parse_args(argv)
    if a.n_prompt < 0 or a.n_gen < 0 or a.n_prompt + a.n_gen == 0:
        ap.error("--n-prompt and --n-gen: non-negative, not both 0")
    try:
        steps = read_manifest(a.manifest)
    except (OSError, ManifestError) as e:
        print(f"bench_compare_table.py: {e}", file=sys.stderr)
        return 2
    rows, reports = build_rows(steps, a.n_prompt, a.n_gen)
    sys.stdout.write(markdown(steps, rows, reports))
    if a.json:
        a.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
