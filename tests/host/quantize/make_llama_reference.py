#!/usr/bin/env python3
"""Writes llama.cpp's quantizations of tests/data/quantize/input.f32 for quantize_test.cpp.

  tests/data/quantize/llama_<type>.bin   ggml_quantize_chunk(type, rows, no importance matrix)
  tests/data/quantize/llama_types.txt    the type llama-quantize gives each tensor of a model
                                         (--dry-run), per scheme: "SCHEME NAME NE0,NE1 FROM TO"

Needs a CPU build of llama.cpp made OUTSIDE this repository (nothing of it is committed):
  LLAMA_CPP_BUILD=/path/to/build python3 tests/host/quantize/make_llama_reference.py MODEL.gguf
  LLAMA_CPP_BUILD=... python3 ... --rows-only                        (only llama_*.bin)
  LLAMA_CPP_BUILD=... python3 ... MODEL.gguf --types-only NAME.txt   (only the tensor types,
      into tests/data/quantize/NAME.txt: llama_types_35b_a3b.txt comes from
      `tools/make_shape_gguf.py 35b-a3b MODEL.gguf --header-only`, which --dry-run reads)
MODEL.gguf is a Qwen3.5 GGUF in F16 (tools/make_shape_gguf.py 0.8b writes one); its tensor
types under each scheme go to llama_types.txt. The rows are quantized through ctypes with
libggml-base from that build.
"""

import ctypes
import os
import pathlib
import re
import subprocess
import sys

import numpy as np

DATA = pathlib.Path(__file__).resolve().parents[2] / "data" / "quantize"
ROWS, COLS = 12, 512
GGML_TYPES = {"q4_0": 2, "q8_0": 8, "q4_k": 12, "q5_k": 13, "q6_k": 14, "iq4_nl": 20, "iq4_xs": 23,
              "mxfp4": 39}
SCHEMES = ["Q8_0", "Q4_0", "Q4_K_M", "Q4_K_S", "Q5_K_M", "Q6_K", "IQ4_XS"]


def find_lib(build: pathlib.Path, name: str) -> pathlib.Path:
    for sub in ("bin", "lib", "ggml/src", "src"):
        p = build / sub / name
        if p.exists():
            return p
    raise SystemExit(f"{name} not found under {build}")


def quantize_rows(build: pathlib.Path) -> None:
    lib = ctypes.CDLL(str(find_lib(build, "libggml-base.so")))
    lib.ggml_quantize_chunk.restype = ctypes.c_size_t
    lib.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                        ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p]
    lib.ggml_row_size.restype = ctypes.c_size_t
    lib.ggml_row_size.argtypes = [ctypes.c_int, ctypes.c_int64]
    x = np.fromfile(DATA / "input.f32", dtype="<f4").reshape(ROWS, COLS)
    for name, t in GGML_TYPES.items():
        out = np.zeros(lib.ggml_row_size(t, COLS) * ROWS, dtype=np.uint8)
        n = lib.ggml_quantize_chunk(t, x.ctypes.data, out.ctypes.data, 0, ROWS, COLS, None)
        assert n == out.size, (name, n, out.size)
        (DATA / f"llama_{name}.bin").write_bytes(out.tobytes())


def tensor_types(build: pathlib.Path, model: pathlib.Path, out_name: str = "llama_types.txt") -> None:
    exe = find_lib(build, "llama-quantize")
    line_re = re.compile(r"\[\s*\d+/\s*\d+\]\s+(\S+)\s+- \[\s*([\d, ]+)\], type =\s*(\S+),.*?(?:\((\S+)\)|size =\s+[\d.]+ MiB$)")
    lines = []
    for scheme in SCHEMES:
        out = subprocess.run([str(exe), "--dry-run", str(model), scheme], capture_output=True, text=True)
        text = out.stdout + out.stderr
        if out.returncode != 0:
            raise SystemExit(f"llama-quantize {scheme} failed:\n{text[-2000:]}")
        n = 0
        for raw in text.splitlines():
            m = line_re.search(raw.strip())
            if not m:
                continue
            name, shape, src, dst = m.group(1), m.group(2), m.group(3), m.group(4) or m.group(3)
            dims = [s.strip() for s in shape.split(",")]
            while len(dims) > 1 and dims[-1] == "1":
                dims.pop()
            lines.append(f"{scheme} {name} {','.join(dims)} {src} {dst}")
            n += 1
        if n == 0:
            raise SystemExit(f"no tensor lines parsed for {scheme}:\n{text[-2000:]}")
    (DATA / out_name).write_text("\n".join(lines) + "\n")


def main() -> int:
    build = pathlib.Path(os.environ.get("LLAMA_CPP_BUILD", ""))
    if build.is_dir() and sys.argv[1:] == ["--rows-only"]:
        quantize_rows(build)
        print(f"wrote llama_*.bin to {DATA}")
        return 0
    if build.is_dir() and len(sys.argv) == 4 and sys.argv[2] == "--types-only":
        tensor_types(build, pathlib.Path(sys.argv[1]), sys.argv[3])
        print(f"wrote {sys.argv[3]} to {DATA}")
        return 0
    if not build.is_dir() or len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    quantize_rows(build)
    tensor_types(build, pathlib.Path(sys.argv[1]))
    print(f"wrote llama_*.bin and llama_types.txt to {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
