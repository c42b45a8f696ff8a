#!/usr/bin/env python3
"""Writes the rows that quantize_test.cpp quantizes and gguf.quants.quantize's bytes for them.

  tests/data/quantize/input.f32     float32 rows, ROWS x COLS, little-endian
  tests/data/quantize/<type>.bin    gguf.quants.quantize(rows, type), for each type the gguf
                                    package can quantize (F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0)

The C++ quantizer must reproduce every byte. The rows mix normal values at several scales,
all-zero and constant blocks, single outliers, values near the f16 limits (subnormal scales),
and exact half steps that test the rounding rules. Run with numpy and `gguf` installed:
  python3 tests/host/quantize/make_quantize_reference.py
"""

import pathlib

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

OUT = pathlib.Path(__file__).resolve().parents[2] / "data" / "quantize"
ROWS, COLS = 12, 512
TYPES = {"f16": T.F16, "bf16": T.BF16, "q4_0": T.Q4_0, "q4_1": T.Q4_1, "q5_0": T.Q5_0,
         "q5_1": T.Q5_1, "q8_0": T.Q8_0, "mxfp4": T.MXFP4}


def rows() -> np.ndarray:
    rng = np.random.default_rng(20261130)
    x = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    x[1] *= 1e-3
    x[2] *= 300.0
    x[3, :64] = 0.0                      # all-zero blocks
    x[3, 64:96] = 0.75                   # a constant block
    x[3, 96:128] = -np.abs(x[3, 96:128])  # one sign only
    x[4, ::37] *= 50.0                   # outliers
    x[5] *= 1e-6                         # scales in the f16 subnormal range
    x[6] = np.float32(2.0 ** -30) * rng.standard_normal(COLS).astype(np.float32)  # below f16
    # Exact half steps: with a block maximum of 127, Q8_0 levels are the values themselves.
    x[7] = rng.integers(-254, 255, COLS).astype(np.float32) / 2
    x[7, ::32] = 127.0
    x[8] = rng.integers(-16, 17, COLS).astype(np.float32) / 2
    x[9] = rng.uniform(-65000, 65000, COLS).astype(np.float32)  # near the f16 limit
    x[10] = np.abs(rng.standard_normal(COLS)).astype(np.float32)
    x[11] = rng.standard_t(2, COLS).astype(np.float32)  # heavy tails
    return x


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    x = rows()
    (OUT / "input.f32").write_bytes(x.astype("<f4").tobytes())
    for name, qtype in TYPES.items():
        data = quants.quantize(x, qtype)
        (OUT / f"{name}.bin").write_bytes(np.ascontiguousarray(data).view(np.uint8).tobytes())
    print(f"wrote {len(TYPES) + 1} files to {OUT}")


if __name__ == "__main__":
    main()
