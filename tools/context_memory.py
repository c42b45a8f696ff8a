#!/usr/bin/env python3
"""Memory a Qwen3.5 model needs per context length, from the formulas of shared/spec/qwen35.md.

KV cache: only the full-attention layers keep one; per token and layer it holds K and V,
Nkv * D values each. Recurrent state: per sequence and Gated DeltaNet layer, the conv state
(Kc - 1) x CD and the delta-rule state Hv x dk x dv, both float32, independent of the context.
Weights: parameter count times the average bits per weight of the file type (approximate for
the K-quant mixtures, which keep some tensors at higher precision).

    python3 tools/context_memory.py            # the README table (F16 KV, one sequence)
"""
GIB = 1024**3

SIZES = {  # layers full/GDN, Nkv, D, CD, Hv, dk, dv, text params (spec section 1.1 / 2.7)
    "0.8B": dict(full=6, gdn=18, nkv=2, d=256, cd=6144, hv=16, dk=128, dv=128, params=0.752e9),
    "2B": dict(full=6, gdn=18, nkv=2, d=256, cd=6144, hv=16, dk=128, dv=128, params=1.882e9),
    "4B": dict(full=8, gdn=24, nkv=4, d=256, cd=8192, hv=32, dk=128, dv=128, params=4.206e9),
    "9B": dict(full=8, gdn=24, nkv=4, d=256, cd=8192, hv=32, dk=128, dv=128, params=8.954e9),
    "27B": dict(full=16, gdn=48, nkv=4, d=256, cd=10240, hv=48, dk=128, dv=128, params=26.896e9),
}
BITS = {"BF16": 16.0, "Q8_0": 8.5, "Q4_K_M": 4.9}  # average bits per weight
KV_BYTES = {"F16": 2.0, "Q8_0": 34 / 32, "F32": 4.0}
CONTEXTS = [8192, 32768, 131072, 262144]


def kv_bytes_per_token(s, kv="F16"):
    return s["full"] * 2 * s["nkv"] * s["d"] * KV_BYTES[kv]


def recurrent_bytes(s):
    return s["gdn"] * (3 * s["cd"] + s["hv"] * s["dk"] * s["dv"]) * 4


def main():
    print("| size | weights BF16 / Q8_0 / Q4_K_M (GiB) | KV F16 per 1K tokens (MiB) | "
          "recurrent state per sequence (MiB) | " +
          " | ".join(f"KV at {c // 1024}K (GiB)" for c in CONTEXTS) + " |")
    print("|---" * (4 + len(CONTEXTS)) + "|")
    for name, s in SIZES.items():
        w = " / ".join(f"{s['params'] * BITS[t] / 8 / GIB:.1f}" for t in BITS)
        kv = kv_bytes_per_token(s)
        cols = " | ".join(f"{kv * c / GIB:.2f}" for c in CONTEXTS)
        print(f"| {name} | {w} | {kv * 1024 / 2**20:.0f} | {recurrent_bytes(s) / 2**20:.1f} | {cols} |")


if __name__ == "__main__":
    main()
