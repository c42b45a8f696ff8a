#!/usr/bin/env python3
"""Where a decode step's GPU time goes, from an Nsight Systems trace of replayed CUDA graphs.

    nsys profile --cuda-graph-trace=node -t cuda -o trace hostlm bench MODEL -p 0 -n 32 -r 1
    nsys export --type sqlite -o trace.sqlite trace.nsys-rep
    tools/device/decode_timeline.py trace.sqlite [--steps 8]

or a Chrome trace of the same kernels (tools/device/decode_trace_torch.py, where nsys is not
installed).

Kernels are split into steps at each embedding kernel. For the last --steps steps it prints,
per kernel name, the launches per step, their mean time, and the mean "gap before": the time
from the end of the kernel before to this one's start (negative where programmatic launch let
them overlap). The gaps are the part of the step in which no kernel of the chain runs, so
they are what fusing launches or shortening chains can win; the durations are the rest.
"""
import argparse
import json
import collections
import sqlite3
import statistics


def short(name: str) -> str:
    for prefix in ("(anonymous namespace)::", "<unnamed>::", "void ", "hostlm::cuda::", "quants::"):
        name = name.replace(prefix, "")
    depth = 0  # the parameter list: the first "(" outside template arguments
    for i, c in enumerate(name):
        depth += c == "<"
        depth -= c == ">"
        if c == "(" and depth == 0:
            name = name[:i]
            break
    return name[:70]


def read_nsys(path: str):
    db = sqlite3.connect(path)
    names = dict(db.execute("SELECT id, value FROM StringIds"))
    rows = db.execute(
        "SELECT start, end, demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start"
    ).fetchall()
    return [(s, e, short(names.get(n, str(n)))) for s, e, n in rows]


def read_chrome_trace(path: str):
    """Kernel events of a Chrome trace (PyTorch profiler's export: microseconds)."""
    events = json.load(open(path))
    events = events.get("traceEvents", events) if isinstance(events, dict) else events
    out = []
    for ev in events:
        if ev.get("cat") == "kernel" and "dur" in ev:
            start = int(round(float(ev["ts"]) * 1e3))
            out.append((start, start + int(round(float(ev["dur"]) * 1e3)), short(ev["name"])))
    return sorted(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", help="an nsys sqlite export, or a Chrome trace (.json)")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--split", default="embed", help="a kernel name fragment that starts a step")
    args = ap.parse_args()
    kernels = (read_chrome_trace(args.trace) if args.trace.endswith(".json")
               else read_nsys(args.trace))
    steps, current = [], []
    for k in kernels:
        if args.split in k[2] and current:
            steps.append(current)
            current = []
        current.append(k)
    if current:
        steps.append(current)
    # The steady steps: the commonest kernel count among the last ones.
    tail = steps[-(args.steps * 3):]
    common = collections.Counter(len(s) for s in tail).most_common(1)[0][0]
    chosen = [s for s in tail if len(s) == common][-args.steps:]
    print(f"{len(kernels)} kernels, {len(steps)} steps; {len(chosen)} steps of {common} kernels used")
    per = collections.defaultdict(lambda: [0, 0.0, 0.0])
    spans, busy, gaps = [], [], []
    pairs = collections.defaultdict(list)
    for s in chosen:
        spans.append((s[-1][1] - s[0][0]) / 1e3)
        busy.append(sum(e - b for b, e, _ in s) / 1e3)
        prev_end, prev_name = None, ""
        for b, e, name in s:
            p = per[name]
            p[0] += 1
            p[1] += (e - b) / 1e3
            if prev_end is not None:
                p[2] += (b - prev_end) / 1e3
                gaps.append(((b - prev_end) / 1e3, name))
                pairs[(prev_name, name)].append((b - prev_end) / 1e3)
            prev_end, prev_name = e, name
    n = len(chosen)
    print(f"step span {statistics.median(spans):.1f} us (first kernel start to last end), "
          f"kernel time summed {statistics.median(busy):.1f} us, "
          f"gaps summed {sum(g for g, _ in gaps) / n:.1f} us a step")
    print(f"{'kernel':70s} {'per step':>8s} {'mean us':>8s} {'us/step':>8s} {'gap/step':>9s} {'mean gap':>9s}")
    for name, (count, dur, gap) in sorted(per.items(), key=lambda kv: -(kv[1][1] + kv[1][2])):
        print(f"{name:70s} {count / n:8.1f} {dur / count:8.2f} {dur / n:8.1f} {gap / n:9.1f} "
              f"{gap / count:9.2f}")

    print("\nkernel pairs by gap summed a step (the chain's handovers that cost most):")
    for (a, b), g in sorted(pairs.items(), key=lambda kv: -sum(kv[1]))[:12]:
        print(f"  {sum(g) / n:7.1f} us  {len(g) / n:5.1f}x  mean {statistics.mean(g):6.2f}  {a}  ->  {b}")


if __name__ == "__main__":
    main()
