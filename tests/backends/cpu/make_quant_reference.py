#!/usr/bin/env python3
"""Writes the reference blocks that test_cpu_backend dequantizes (tests/data/quants/).

For every GGUF weight type the CPU backend computes with, this writes
  <type>.blocks  raw blocks exactly as they sit in a GGUF file
  <type>.f32     gguf.quants.dequantize of those blocks, little-endian float32
The C++ test requires its own dequantization to reproduce <type>.f32 bit for bit.

The blocks mix: gguf's own quantizer output (for the types gguf can quantize), random bytes
(any bytes are a valid block once the f16 scales are kept finite), f16 scales at the edges
of the format (largest, smallest normal, subnormals, signed zeros), and byte sweeps so that
every value of every quant byte occurs. Run with numpy and the `gguf` package installed:
  python3 tests/backends/cpu/make_quant_reference.py
"""

import pathlib
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

OUT = pathlib.Path(__file__).resolve().parents[2] / "data" / "quants"

# Each block's f16 scale offsets, and its other fields as (offset, length). The scales must
# stay finite (not NaN/Inf): a NaN would make bit-identity meaningless and no real file
# carries one.
LAYOUT = {
    T.Q4_0: ([0], [(2, 16)]),
    T.Q4_1: ([0, 2], [(4, 16)]),
    T.Q5_0: ([0], [(2, 4), (6, 16)]),
    T.Q5_1: ([0, 2], [(4, 4), (8, 16)]),
    T.Q8_0: ([0], [(2, 32)]),
    T.IQ4_NL: ([0], [(2, 16)]),
    T.Q2_K: ([80, 82], [(0, 16), (16, 64)]),
    T.Q3_K: ([108], [(0, 32), (32, 64), (96, 12)]),
    T.Q4_K: ([0, 2], [(4, 12), (16, 128)]),
    T.Q5_K: ([0, 2], [(4, 12), (16, 32), (48, 128)]),
    T.Q6_K: ([208], [(0, 128), (128, 64), (192, 16)]),
    T.IQ4_XS: ([0], [(2, 2), (4, 4), (8, 128)]),
    T.TQ1_0: ([52], [(0, 48), (48, 4)]),
    T.TQ2_0: ([64], [(0, 64)]),
    T.IQ2_XXS: ([0], [(2, 64)]),
    T.IQ2_XS: ([0], [(2, 64), (66, 8)]),
    T.IQ2_S: ([0], [(2, 32), (34, 32), (66, 8), (74, 8)]),
    T.IQ3_XXS: ([0], [(2, 64), (66, 32)]),
    T.IQ3_S: ([0], [(2, 64), (66, 8), (74, 32), (106, 4)]),
    T.IQ1_S: ([0], [(2, 32), (34, 16)]),
    # IQ1_M's f16 scale is spread over the top nibbles of its four scale words (bytes 48-55).
    T.IQ1_M: ([], [(0, 32), (32, 16), (48, 8)]),
    # MXFP4's scale is one E8M0 byte (a power of two, 2^(e - 128) as gguf reads it): any
    # byte is finite, so it is a plain field here, with its edges added in make_blocks.
    T.MXFP4: ([], [(0, 1), (1, 16)]),
}
# E8M0 bytes at the edges: the two that gguf reads as subnormal floats, 1.0's neighbours and
# large ones. Random bytes are capped at 200 (values up to 12 * 2^72): above about 252 the
# largest codes overflow float, and the tests' float dot products over thousands of such
# values overflow well before; no real file comes near (e is about 127 for unit weights).
MAX_E8M0 = 200
EDGE_E8M0 = [0, 1, 2, 127, 128, 129, 198, 199, MAX_E8M0]
SWEEP_ROWS = 16

# f16 bit patterns at the edges of the format.
EDGE_SCALES = [
    0x7BFF,  # 65504, the largest finite
    0xFBFF,  # -65504
    0x0001,  # smallest subnormal
    0x8001,  # its negative
    0x03FF,  # largest subnormal
    0x83FF,
    0x0200,  # a subnormal in the middle
    0x8155,
    0x0400,  # smallest normal
    0x0000,  # +0
    0x8000,  # -0
    0x3C00,  # 1.0
    0xBC00,  # -1.0
]


def finite_f16(bits: np.ndarray) -> np.ndarray:
    """Clears an exponent bit wherever the pattern would be Inf/NaN."""
    bits = bits.astype(np.uint16)
    bad = (bits & 0x7C00) == 0x7C00
    return np.where(bad, bits & ~np.uint16(0x0400), bits).astype(np.uint16)


def set_f16(blocks: np.ndarray, offset: int, values: np.ndarray) -> None:
    blocks[:, offset : offset + 2] = values.astype("<u2").view(np.uint8).reshape(-1, 2)


def make_blocks(qtype: T, rng: np.random.Generator) -> np.ndarray:
    block_elems, block_bytes = GGML_QUANT_SIZES[qtype]
    fields, others = LAYOUT[qtype]
    assert sum(l for _, l in others) + 2 * len(fields) == block_bytes, qtype.name
    parts = []

    # Real quantizer output, where gguf can quantize: typical, huge and tiny magnitudes.
    for scale in (1.0, 3.0e3, 2.0e-7):
        x = (rng.standard_normal((4, block_elems)) * scale).astype(np.float32)
        try:
            parts.append(quants.quantize(x, qtype).reshape(-1, block_bytes))
        except NotImplementedError:
            break

    # Random blocks with random finite scales.
    n_random = 16 if block_elems == 32 or not fields else 6  # no edge-scale rows: more random ones
    rand = rng.integers(0, 256, (n_random, block_bytes), dtype=np.uint8)
    for off in fields:
        set_f16(rand, off, finite_f16(rng.integers(0, 1 << 16, n_random)))
    parts.append(rand)

    # Edge scales, each field in turn over the whole list, with random quant bytes.
    for off in fields:
        edge = rng.integers(0, 256, (len(EDGE_SCALES), block_bytes), dtype=np.uint8)
        for other in fields:
            set_f16(edge, other, finite_f16(rng.integers(0, 1 << 16, len(EDGE_SCALES))))
        set_f16(edge, off, np.array(EDGE_SCALES))
        parts.append(edge)

    # Byte sweeps: over SWEEP_ROWS blocks, every field of at least 16 bytes takes every
    # value 0..255 (byte p of row r holds r*len + p); shorter fields (packed scales, Q5's
    # high bits) get a strided pattern and are covered further by the random blocks.
    # All-0x00 and all-0xFF blocks close the list. Scales alternate 1.0 and a subnormal.
    sweep = np.zeros((SWEEP_ROWS + 2, block_bytes), dtype=np.uint8)
    rows = np.arange(SWEEP_ROWS).reshape(-1, 1)
    for off, length in others:
        pos = np.arange(length).reshape(1, -1)
        if length >= 16:
            pattern = rows * length + pos
        else:
            pattern = rows * 67 + pos * 29 + 5
        sweep[:SWEEP_ROWS, off : off + length] = pattern & 0xFF
        sweep[SWEEP_ROWS + 1, off : off + length] = 0xFF
    for off in fields:
        set_f16(sweep, off, np.where(np.arange(SWEEP_ROWS + 2) % 2 == 0, 0x3C00, 0x0123))
    parts.append(sweep)
    if qtype == T.MXFP4:
        edge = rng.integers(0, 256, (len(EDGE_E8M0), block_bytes), dtype=np.uint8)
        edge[:, 0] = EDGE_E8M0
        parts.append(edge)
    blocks = np.concatenate(parts, axis=0)
    if qtype == T.MXFP4:
        blocks[:, 0] = np.minimum(blocks[:, 0], MAX_E8M0)
    if qtype == T.IQ1_M:
        iq1_m_finite_scales(blocks)
    return blocks


def iq1_m_finite_scales(blocks: np.ndarray) -> None:
    """Keeps IQ1_M's spread f16 scale finite: its exponent's lowest bit (bit 10) is bit 14 of
    the third scale word, cleared wherever the exponent would be all ones."""
    words = blocks[:, 48:56].copy().view("<u2")
    d = (words[:, 0] >> 12) | ((words[:, 1] >> 8) & 0xF0) | ((words[:, 2] >> 4) & 0xF00) | (words[:, 3] & 0xF000)
    bad = (d & 0x7C00) == 0x7C00
    words[bad, 2] &= np.uint16(~0x4000 & 0xFFFF)
    blocks[:, 48:56] = words.view(np.uint8).reshape(-1, 8)


def main() -> int:
    rng = np.random.default_rng(20240531)
    OUT.mkdir(parents=True, exist_ok=True)
    for qtype in LAYOUT:
        blocks = make_blocks(qtype, rng)
        values = quants.dequantize(blocks.reshape(-1), qtype).astype("<f4")
        assert np.all(np.isfinite(values)), qtype.name
        name = qtype.name.lower()
        (OUT / f"{name}.blocks").write_bytes(blocks.tobytes())
        (OUT / f"{name}.f32").write_bytes(values.tobytes())
        print(f"{name}: {blocks.shape[0]} blocks")

    # The plain types: finite f16 patterns (all exponents, subnormals, signed zeros) and
    # bf16 patterns (all finite exponents), converted by gguf.
    f16 = finite_f16(np.arange(0, 1 << 16, 29, dtype=np.uint32).astype(np.uint16))
    f16_vals = quants.dequantize(f16.view(np.uint8), T.F16).astype("<f4")
    (OUT / "f16.blocks").write_bytes(f16.astype("<u2").tobytes())
    (OUT / "f16.f32").write_bytes(f16_vals.tobytes())
    bf16 = np.arange(0, 1 << 16, 31, dtype=np.uint32).astype(np.uint16)
    bf16 = bf16[(bf16 & 0x7F80) != 0x7F80]
    bf16_vals = quants.dequantize(bf16.astype("<u2").view(np.uint8), T.BF16).astype("<f4")
    (OUT / "bf16.blocks").write_bytes(bf16.astype("<u2").tobytes())
    (OUT / "bf16.f32").write_bytes(bf16_vals.tobytes())
    total = sum(p.stat().st_size for p in OUT.iterdir())
    print(f"{total} bytes in {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
