#!/usr/bin/env python3
"""Random blocks of a GGUF weight type with small scales, and their gguf dequantization.

  python3 make_iq_blocks.py TYPE N_BLOCKS OUT_PREFIX [SEED]

writes OUT_PREFIX.blocks (raw blocks as a GGUF file stores them) and OUT_PREFIX.f32
(gguf.quants.dequantize of them, little-endian float32). The scales are chosen so that the
weights stay near the magnitude of a trained matrix (|w| up to about 0.05), so that a model
built with them gives finite, comparable logits (quantized_logits_test.cpp).
"""

import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES

# Where each type's f16 scale sits, and the largest |value| a unit scale gives.
SCALE = {
    "IQ2_XXS": (0, 43 * 15.5 * 0.25),
    "IQ2_XS": (0, 43 * 15.5 * 0.25),
    "IQ2_S": (0, 43 * 15.5 * 0.25),
    "IQ3_XXS": (0, 62 * 15.5 * 0.5),
    "IQ3_S": (0, 15 * 31),
    "IQ1_S": (0, 1.125 * 15),
    "IQ1_M": (None, 1.125 * 15),  # spread over the scale words' top nibbles
    "TQ1_0": (52, 1),
    "TQ2_0": (64, 2),  # the unused code 3 reads as 2
    "MXFP4": ("e8m0", 12),  # a power-of-two scale byte at offset 0
}


def main() -> int:
    name, n_blocks, prefix = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    qtype = T[name]
    _, block_bytes = GGML_QUANT_SIZES[qtype]
    rng = np.random.default_rng(seed)
    blocks = rng.integers(0, 256, (n_blocks, block_bytes), dtype=np.uint8)
    offset, largest = SCALE[name]
    d = (0.05 / largest * rng.uniform(0.5, 1.0, n_blocks)).astype(np.float16)
    d_bits = d.view(np.uint16)
    if offset == "e8m0":  # 2^(e - 128) at or below d
        blocks[:, 0] = (128 + np.floor(np.log2(d.astype(np.float32)))).astype(np.uint8)
    elif offset is not None:
        blocks[:, offset : offset + 2] = d_bits.astype("<u2").view(np.uint8).reshape(-1, 2)
    else:
        words = blocks[:, 48:56].copy().view("<u2")
        for i in range(4):
            words[:, i] = (words[:, i] & 0x0FFF) | (((d_bits >> (4 * i)) & 0xF) << 12)
        blocks[:, 48:56] = words.view(np.uint8).reshape(-1, 8)
    values = quants.dequantize(blocks.reshape(-1), qtype).astype("<f4")
    assert np.all(np.isfinite(values)) and np.abs(values).max() <= 0.06, name
    open(prefix + ".blocks", "wb").write(blocks.tobytes())
    open(prefix + ".f32", "wb").write(values.tobytes())
    return 0


if __name__ == "__main__":
    sys.exit(main())
