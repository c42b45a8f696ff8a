import json, sys, collections
ev = json.load(open(sys.argv[1]))
ev = ev.get("traceEvents", ev)
cats = collections.Counter(e.get("cat") for e in ev)
print(cats.most_common(12))
gpu = sorted([e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and "dur" in e], key=lambda e: float(e["ts"]))
embeds = [i for i, e in enumerate(gpu) if "embed" in e["name"]]
i0, i1 = embeds[20], embeds[21]
step = gpu[i0:i1]
print("events in step 20:", len(step), collections.Counter(e["cat"] for e in step))
t0 = float(step[0]["ts"]); prev_end = t0
kv = 0
for e in step:
    s = float(e["ts"]); d = float(e["dur"])
    nm = e["name"].replace("(anonymous namespace)::", "")[:60]
    if "kv_store" in nm or "qk_norm" in nm or e["cat"] != "kernel" or "paged" in nm:
        print(f"{s - t0:9.2f} {d:7.2f} gap {s - prev_end:7.2f} {e['cat']:10s} {nm} stream={e.get('args', {}).get('stream')}")
    prev_end = s + d
rt = [e for e in ev if e.get("cat") == "cuda_runtime"]
print("runtime calls:", collections.Counter(e["name"] for e in rt).most_common(10))
