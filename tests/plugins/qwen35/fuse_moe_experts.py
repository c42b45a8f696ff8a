#!/usr/bin/env python3
"""Copies a Qwen3.5-MoE checkpoint folder with its experts in transformers' fused form.

Checkpoints store each expert's projections apart (mlp.experts.<e>.gate_proj.weight, ...);
transformers holds them as mlp.experts.gate_up_proj [E, 2 Fe, H] (each expert's gate rows,
then its up rows) and mlp.experts.down_proj [E, H, Fe], and tools that save that state write
those names. The test loads both folders and expects the same logits.

    python3 fuse_moe_experts.py SRC_FOLDER DST_FOLDER
"""
import json
import pathlib
import re
import shutil
import struct
import sys


def read_safetensors(path):
    raw = path.read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        tensors[name] = (info["dtype"], info["shape"], data[begin:end])
    return tensors, header.get("__metadata__")


def write_safetensors(path, tensors, metadata):
    header, blobs, offset = {}, [], 0
    for name, (dtype, shape, blob) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def main():
    src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    shutil.copytree(src, dst, dirs_exist_ok=True)
    tensors, metadata = read_safetensors(src / "model.safetensors")
    pattern = re.compile(r"(.*\.mlp\.experts)\.(\d+)\.(gate_proj|up_proj|down_proj)\.weight$")
    experts = {}
    out = {}
    for name, t in tensors.items():
        m = pattern.match(name)
        if m:
            experts.setdefault(m.group(1), {})[(int(m.group(2)), m.group(3))] = t
        else:
            out[name] = t
    for base, parts in experts.items():
        n = 1 + max(e for e, _ in parts)
        dtype, gate_shape, _ = parts[(0, "gate_proj")]
        _, down_shape, _ = parts[(0, "down_proj")]
        gate_up = b"".join(parts[(e, "gate_proj")][2] + parts[(e, "up_proj")][2] for e in range(n))
        down = b"".join(parts[(e, "down_proj")][2] for e in range(n))
        out[base + ".gate_up_proj"] = (dtype, [n, 2 * gate_shape[0], gate_shape[1]], gate_up)
        out[base + ".down_proj"] = (dtype, [n] + down_shape, down)
    write_safetensors(dst / "model.safetensors", out, metadata)


if __name__ == "__main__":
    main()
