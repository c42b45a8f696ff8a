#!/usr/bin/env python3
"""Per-tensor quantization error of two quantized GGUFs of the same source, side by side.

  python3 tools/compare_quant_rmse.py SOURCE.gguf A.gguf B.gguf [--names A,B] [--all]

For every tensor both files re-encoded (type differs from SOURCE's), prints the type in each
file and the RMSE of its dequantized values against SOURCE's, as a markdown table, then the
totals (RMSE over all re-encoded elements). Dequantization is gguf.quants.dequantize (PyPI
`gguf`), so neither file's own reader is involved. Without --all only the first tensor of
each (A type, B type, shape) kind is listed, plus the totals over all of them.
"""

import argparse
import sys

import numpy as np
from gguf import GGUFReader
from gguf import quants


def tensors(path):
    return {t.name: t for t in GGUFReader(path).tensors}


def values(t):
    return np.asarray(quants.dequantize(t.data, t.tensor_type), dtype=np.float64).reshape(-1)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source")
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--names", default="A,B")
    ap.add_argument("--all", action="store_true")
    args = ap.parse_args()
    na, nb = args.names.split(",")
    src, ta, tb = tensors(args.source), tensors(args.a), tensors(args.b)
    print(f"| tensor | shape | {na} type | {na} RMSE | {nb} type | {nb} RMSE | {na}/{nb} |")
    print("|---|---|---|---:|---|---:|---:|")
    seen = set()
    se_a = se_b = 0.0
    n = 0
    worse = 0
    for name, s in src.items():
        if name not in ta or name not in tb:
            continue
        a, b = ta[name], tb[name]
        if a.tensor_type == s.tensor_type and b.tensor_type == s.tensor_type:
            continue
        ref = values(s)
        da, db = values(a) - ref, values(b) - ref
        ea, eb = float(np.sqrt(np.mean(da * da))), float(np.sqrt(np.mean(db * db)))
        se_a += float(np.sum(da * da))
        se_b += float(np.sum(db * db))
        n += ref.size
        worse += ea > eb * (1 + 1e-6)
        kind = (a.tensor_type.name, b.tensor_type.name, tuple(int(d) for d in s.shape))
        if not args.all and kind in seen:
            continue
        seen.add(kind)
        ratio = ea / eb if eb > 0 else float("nan")
        shape = "x".join(str(int(d)) for d in s.shape)
        print(f"| {name} | {shape} | {a.tensor_type.name} | {ea:.6g} | {b.tensor_type.name} | {eb:.6g} | {ratio:.4f} |")
    ra, rb = np.sqrt(se_a / max(n, 1)), np.sqrt(se_b / max(n, 1))
    print(f"| **all re-encoded** | {n} values | | {ra:.6g} | | {rb:.6g} | {ra / rb if rb else float('nan'):.4f} |")
    print(f"\n{worse} tensors where {na}'s RMSE exceeds {nb}'s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
