#!/usr/bin/env python3
"""Writes a random-weight Qwen3.5 GGUF with the real shapes of a released size, for benchmarks.

Speed and memory depend on shapes, not values, so these files stand in for the real
checkpoints (which cannot be downloaded here). Sizes are those of shared/spec/qwen35.md
section 1.1; tensor names, shapes and metadata keys are those `hostlm convert` writes and
llama.cpp reads. The tokenizer is the tiny test models' 2048-token vocabulary padded with
filler tokens to the real 248320 rows, so that llama.cpp loads the file too.

  python3 tools/make_shape_gguf.py 0.8b OUT.gguf [--seed S] [--type T]
  python3 tools/make_shape_gguf.py 2b|4b OUT.gguf           (tied output head, as the release)
  python3 tools/make_shape_gguf.py 9b|27b OUT.gguf          (untied output head, as the release)
  python3 tools/make_shape_gguf.py test256 OUT.gguf         (a 5 MB model for tests)
  python3 tools/make_shape_gguf.py 35b-a3b|122b-a10b|397b-a17b OUT.gguf --header-only
                                                            (mixture of experts, spec 1.2)

--header-only writes the metadata and tensor table and leaves the data a hole of the right
size (a sparse file: nothing is drawn or stored), for tools that read only the table, such
as `llama-quantize --dry-run`. --layers N keeps a size's shapes with N layers instead (for
a file that fits a small machine's page cache; every fourth layer is still attention).

--type F16 (the default), F32, BF16, Q8_0 or Q4_K_M: the storage of the matrices. The float types
hold normal values of std 1/sqrt(columns) (0.02 for the embeddings and for test256). The
quantized types are written directly, without an F16 file in between: random quants under
small f16 block scales chosen so that the dequantized values have about that std, zero
mean, and no NaN or Inf (a 27B Q4_K_M file takes about a minute). They are not what
`hostlm quantize` would make of the F16 file's values; only the types are the same.

Per-tensor types are those `hostlm quantize` chooses (host/src/quantize/type_choice.cpp,
llama.cpp's rules without an importance matrix), ported in `choose_types` below:
- only tensors of two or more dimensions whose name ends in "weight" are re-encoded; the
  1-D norms, biases and ssm_a, and the conv kernel ssm_conv1d, stay F32;
- F16 / BF16 / Q8_0: every other matrix gets that type;
- Q4_K_M: Q4_K, except output.weight and (when tied) token_embd.weight, which get Q6_K;
  the value projections (attn_v, and attn_qkv of the Gated DeltaNet layers, counted
  together in llama.cpp's order: by layer, then by name) and ffn_down get Q6_K where
  use_more_bits(i, n) holds: the first and last eighth of the layers and every third in
  between; a type whose block does not divide the row falls back (Q4_K -> Q5_0,
  Q6_K -> Q8_0), which no released shape needs;
- mixture of experts: the router and the shared expert's gate stay F32, the stacked experts
  are matrices like the others, ffn_down's layer is the one in its name (each layer has the
  experts' and the shared expert's), and with exactly 8 experts attn_k and attn_v are Q8_0
  and attn_output is Q5_K under Q4_K_M.
tests/cli/test_shape_gguf.py checks the choice against `hostlm quantize` on test256.

Tensors are written one at a time, the next one drawn (on every core) while one is written,
so at most two are in memory (about 2.5 GB each for the 27B F16 embeddings, 1 GB quantized).

--tokenizer FILE.json puts another vocabulary in the file instead, padded the same way: the
real Qwen3.5 one (`tools/make_tokenizer_reference.py --qwen35-real DIR` writes it) makes the
grammar-constrained benchmarks (`hostlm bench --format`) run over the real 248K tokens.
"""

import argparse
import concurrent.futures
import json
import os
import pathlib
import sys
import time

import numpy as np
import gguf

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tests" / "data" / "models" / "tiny-tied-f32" / "tokenizer.json"

# Released dense sizes (hidden, ffn, layers, query / KV heads, GDN value heads, tied or not:
# spec section 1.1); the rest is common to every release. "test256" is a small model whose
# rows are whole K-quant super-blocks, for the quantized-logits tests.
COMMON = dict(head_dim=256, rot_dims=64, k_heads=16, dk=128, vocab=248320)
SIZES = {
    "0.8b": dict(COMMON, hidden=1024, ffn=3584, layers=24, n_head=8, n_head_kv=2, v_heads=16),
    "2b": dict(COMMON, hidden=2048, ffn=6144, layers=24, n_head=8, n_head_kv=2, v_heads=16),
    "4b": dict(COMMON, hidden=2560, ffn=9216, layers=32, n_head=16, n_head_kv=4, v_heads=32),
    "9b": dict(COMMON, hidden=4096, ffn=12288, layers=32, n_head=16, n_head_kv=4, v_heads=32,
               untied=True),
    "27b": dict(COMMON, hidden=5120, ffn=17408, layers=64, n_head=24, n_head_kv=4, v_heads=48,
                untied=True),
    "test256": dict(head_dim=64, rot_dims=16, k_heads=2, dk=64, vocab=2048, hidden=256, ffn=512,
                    layers=4, n_head=4, n_head_kv=1, v_heads=4, std=0.02),
    # Mixture of experts (qwen35moe, spec 1.2): every layer routes to `experts_used` of
    # `experts` experts of width expert_ffn, plus a shared expert of width shared_ffn.
    "35b-a3b": dict(COMMON, hidden=2048, layers=40, n_head=16, n_head_kv=2, v_heads=32,
                    experts=256, experts_used=8, expert_ffn=512, shared_ffn=512, untied=True),
    "122b-a10b": dict(COMMON, hidden=3072, layers=48, n_head=32, n_head_kv=2, v_heads=64,
                      experts=256, experts_used=8, expert_ffn=1024, shared_ffn=1024, untied=True),
    "397b-a17b": dict(COMMON, hidden=4096, layers=60, n_head=32, n_head_kv=2, v_heads=64,
                      experts=512, experts_used=10, expert_ffn=1024, shared_ffn=1024, untied=True),
}
CONV_K = 4
INTERVAL = 4

Q = gguf.GGMLQuantizationType
# --type: the base type of the matrices and llama.cpp's general.file_type id.
FILE_TYPES = {"F32": (Q.F32, 0), "F16": (Q.F16, 1), "BF16": (Q.BF16, 32), "Q8_0": (Q.Q8_0, 7),
              "Q4_K_M": (Q.Q4_K, 15)}
FALLBACK = {Q.Q4_K: Q.Q5_0, Q.Q5_K: Q.Q5_1, Q.Q6_K: Q.Q8_0}


def block_size(t):
    return gguf.GGML_QUANT_SIZES[t][0]


def use_more_bits(i, n):
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def layer_of(name):
    parts = name.split(".")
    return int(parts[1]) if len(parts) > 2 and parts[0] == "blk" and parts[1].isdigit() else -1


def re_encoded(name, shape):
    """Whether `hostlm quantize` gives this tensor the scheme's type (allows_quantization)."""
    dims = list(shape)
    while len(dims) > 1 and dims[0] == 1:  # numpy order: leading 1s are ggml's trailing ones
        dims.pop(0)
    excluded = ("_norm.weight", "ffn_gate_inp.weight", "ssm_conv1d", "shortconv.conv.weight",
                "attn_rel_b.weight")
    return (len(dims) >= 2 and name.endswith("weight") and not any(e in name for e in excluded)
            and name not in ("position_embd.weight", "token_types.weight"))


def choose_types(tensors, n_layer, scheme, n_expert=0):
    """Type of every (name, numpy shape) in `tensors` under `scheme` (a FILE_TYPES key), as
    host/src/quantize/type_choice.cpp chooses it; tensors that are not re-encoded get None
    (they keep their own type, F32 here)."""
    base = FILE_TYPES[scheme][0]
    is_value = lambda n: any(p in n for p in ("attn_qkv.weight", "attn_kv_b.weight", "attn_v.weight"))
    n_value = sum(1 for name, _ in tensors if is_value(name))
    tied = not any(name == "output.weight" for name, _ in tensors)
    order = sorted(range(len(tensors)), key=lambda k: (layer_of(tensors[k][0]), tensors[k][0]))
    out = [None] * len(tensors)
    i_value = i_ffn_down = 0
    for k in order:
        name, shape = tensors[k]
        if not re_encoded(name, shape):
            continue
        t = base
        if block_size(base) > 1:
            ncols = shape[-1]
            if name == "output.weight" or (tied and name == "token_embd.weight"):
                t = Q.Q8_0 if ncols % block_size(t) else (Q.Q6_K if t != Q.Q8_0 else t)
            elif name == "token_embd.weight":
                pass
            elif is_value(name):
                if scheme == "Q4_K_M" and use_more_bits(i_value, n_value):
                    t = Q.Q6_K
                if n_expert == 8:
                    t = Q.Q8_0
                i_value += 1
            elif "attn_k.weight" in name and n_expert == 8:
                t = Q.Q8_0
            elif "attn_output.weight" in name and n_expert == 8 and scheme == "Q4_K_M":
                t = Q.Q5_K
            elif "ffn_down" in name:
                layer = layer_of(name) if n_expert > 1 else i_ffn_down
                if scheme == "Q4_K_M" and use_more_bits(layer, n_layer):
                    t = Q.Q6_K
                i_ffn_down += 1
            if ncols % block_size(t):
                alt = FALLBACK.get(t)
                if alt is None:
                    sys.exit(f"{name}: rows of {ncols} values are no whole number of {t.name} blocks")
                t = alt if ncols % block_size(alt) == 0 else Q.F16
        out[k] = t
    return out


# ---- random quantized blocks ------------------------------------------------------------
# Each writer returns the blocks of `n` super-blocks / blocks as a uint8 array [n, bytes],
# quants from random bits and f16 scales set so that the values have std `std`.

def _random_bytes(bulk, n, width):
    words = bulk.random_raw((n * width + 7) // 8)
    return words.view(np.uint8)[: n * width].reshape(n, width)


def _uniform_square(lo, hi):
    """E[x^2] for x uniform over the integers lo..hi."""
    k = hi - lo + 1
    return ((lo + hi) / 2) ** 2 + (k * k - 1) / 12


def _f16(x):
    return np.array([x], dtype=np.float16).view(np.uint8)


def q8_0_blocks(bulk, gen, n, std):
    # x = d * q, q int8 uniform in -128..127; d of random sign, so that q's mean of -0.5
    # does not bias the tensor.
    b = _random_bytes(bulk, n, 34)
    b[:, 0:2] = _f16(std / np.sqrt(_uniform_square(-128, 127)))
    b[:, 1] |= gen.integers(0, 2, size=n, dtype=np.uint8) << 7
    return b


SC4_LO, SC4_HI = 8, 31  # Q4_K sub-block scales (6 bits)


def q4_k_blocks(bulk, gen, n, std):
    # x = d * sc_j * q - dmin * m_j with q uniform in 0..15; m_j = sc_j and dmin = 7.5 d give
    # zero mean, x = d * sc_j * (q - 7.5).
    b = _random_bytes(bulk, n, 144)
    d = std / np.sqrt(_uniform_square(SC4_LO, SC4_HI) * (16 * 16 - 1) / 12)
    b[:, 0:2] = _f16(d)
    b[:, 2:4] = _f16(7.5 * float(np.float16(d)))
    sc = gen.integers(SC4_LO, SC4_HI + 1, size=(n, 8), dtype=np.uint8)
    m = sc
    # ggml's 12-byte packing of eight 6-bit scales and mins (get_scale_min_k4).
    b[:, 4:8] = sc[:, 0:4] | ((sc[:, 4:8] >> 4) << 6)
    b[:, 8:12] = m[:, 0:4] | ((m[:, 4:8] >> 4) << 6)
    b[:, 12:16] = (sc[:, 4:8] & 0xF) | ((m[:, 4:8] & 0xF) << 4)
    return b


SC6_LO, SC6_HI = 2, 9  # Q6_K sub-block scale magnitudes (int8, random sign)


def q6_k_blocks(bulk, gen, n, std):
    # Layout ql[128] qh[64] scales[16] d; x = d * sc * (q - 32), q uniform in 0..63.
    b = _random_bytes(bulk, n, 210)
    mag = gen.integers(SC6_LO, SC6_HI + 1, size=(n, 16), dtype=np.int8)
    sign = np.where(gen.integers(0, 2, size=(n, 16), dtype=np.int8) == 1, 1, -1).astype(np.int8)
    b[:, 192:208] = (mag * sign).view(np.uint8)
    b[:, 208:210] = _f16(std / np.sqrt(_uniform_square(SC6_LO, SC6_HI) * _uniform_square(-32, 31)))
    return b


def quantized_matrix(t, rows, cols, std, bulk, gen):
    n = rows * cols // block_size(t)
    if t == Q.Q8_0:
        blocks = q8_0_blocks(bulk, gen, n, std)
    elif t == Q.Q4_K:
        blocks = q4_k_blocks(bulk, gen, n, std)
    elif t == Q.Q6_K:
        blocks = q6_k_blocks(bulk, gen, n, std)
    else:
        sys.exit(f"make_shape_gguf: cannot write random {t.name} blocks")
    return blocks.reshape(rows, -1)


def tokenizer_parts(vocab_size, path=TOKENIZER):
    """Tokens, types and merges of a tokenizer.json (the tiny vocabulary by default), padded to
    vocab_size tokens."""
    data = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    vocab = data["model"]["vocab"]
    tokens = [""] * len(vocab)
    for text, i in vocab.items():
        tokens[i] = text
    types = [gguf.TokenType.NORMAL] * len(tokens)
    for added in data.get("added_tokens", []):
        i = added["id"]
        while len(tokens) <= i:
            tokens.append("")
            types.append(gguf.TokenType.NORMAL)
        tokens[i] = added["content"]
        types[i] = gguf.TokenType.CONTROL if added.get("special") else gguf.TokenType.USER_DEFINED
    n_real = len(tokens)
    if n_real > vocab_size:
        sys.exit(f"{path}: {n_real} tokens do not fit the model's {vocab_size} rows")
    # Normal tokens whose text is their name: random weights pick fillers almost always, and a
    # server must stream text for them, or a client timing the first text (serving TTFT)
    # would wait for a rare real token.
    tokens += [f"<filler_{i}>" for i in range(n_real, vocab_size)]
    types += [gguf.TokenType.NORMAL] * (vocab_size - n_real)
    merges = data["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    eos = next((a["id"] for a in data.get("added_tokens", []) if a["content"] == "<|im_end|>"), n_real - 1)
    return tokens, types, merges, eos


def tensor_plan(s, rng):
    """The model's tensors in file order: (name, numpy shape, std for a matrix or a function
    making the F32 values). The functions draw from `rng` when called, in this order."""
    H, F, L = s["hidden"], s.get("ffn", 0), s["layers"]
    n_head, n_head_kv, v_heads = s["n_head"], s["n_head_kv"], s["v_heads"]
    HEAD_DIM, K_HEADS, DK, VOCAB = s["head_dim"], s["k_heads"], s["dk"], s["vocab"]
    DV = DK
    key_dim, value_dim = K_HEADS * DK, v_heads * DV
    conv_dim = 2 * key_dim + value_dim
    plan = []

    def matrix(name, rows, cols, scale=None):
        # PyTorch order [rows (out), cols (in)]; values with std 1/sqrt(cols) keep the
        # activations of a random network in range.
        # The test model uses the small std of Hugging Face's initializer, which keeps the
        # random network close to linear, so that quantization errors are not amplified.
        plan.append((name, (rows, cols), scale if scale is not None else s.get("std", 1.0 / np.sqrt(cols))))

    def vector(name, shape, make):
        plan.append((name, shape, lambda: np.asarray(make(), dtype=np.float32)))

    def norm(name, n):
        vector(name, (n,), lambda: 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32))

    matrix("token_embd.weight", VOCAB, H, scale=0.02)
    norm("output_norm.weight", H)
    if s.get("untied"):
        matrix("output.weight", VOCAB, H)
    for i in range(L):
        p = f"blk.{i}."
        norm(p + "attn_norm.weight", H)
        norm(p + "post_attention_norm.weight", H)
        if (i + 1) % INTERVAL == 0:
            matrix(p + "attn_q.weight", 2 * n_head * HEAD_DIM, H)
            matrix(p + "attn_k.weight", n_head_kv * HEAD_DIM, H)
            matrix(p + "attn_v.weight", n_head_kv * HEAD_DIM, H)
            matrix(p + "attn_output.weight", H, n_head * HEAD_DIM)
            norm(p + "attn_q_norm.weight", HEAD_DIM)
            norm(p + "attn_k_norm.weight", HEAD_DIM)
        else:
            matrix(p + "attn_qkv.weight", conv_dim, H)
            matrix(p + "attn_gate.weight", value_dim, H)
            matrix(p + "ssm_beta.weight", v_heads, H)
            matrix(p + "ssm_alpha.weight", v_heads, H)
            vector(p + "ssm_conv1d.weight", (conv_dim, CONV_K),
                   lambda: 0.5 * rng.standard_normal((conv_dim, CONV_K), dtype=np.float32))
            vector(p + "ssm_dt.bias", (v_heads,), lambda: 0.1 * rng.standard_normal(v_heads, dtype=np.float32))
            vector(p + "ssm_a", (v_heads,), lambda: -np.exp(0.5 * rng.standard_normal(v_heads, dtype=np.float32)))
            norm(p + "ssm_norm.weight", DV)
            matrix(p + "ssm_out.weight", H, value_dim)
        if "experts" in s:
            E, FE, FS = s["experts"], s["expert_ffn"], s["shared_ffn"]
            vector(p + "ffn_gate_inp.weight", (E, H),
                   lambda: rng.standard_normal((E, H), dtype=np.float32) / np.sqrt(H))
            plan.append((p + "ffn_gate_exps.weight", (E, FE, H), 1.0 / np.sqrt(H)))
            plan.append((p + "ffn_up_exps.weight", (E, FE, H), 1.0 / np.sqrt(H)))
            plan.append((p + "ffn_down_exps.weight", (E, H, FE), 1.0 / np.sqrt(FE)))
            vector(p + "ffn_gate_inp_shexp.weight", (1, H),
                   lambda: rng.standard_normal((1, H), dtype=np.float32) / np.sqrt(H))
            matrix(p + "ffn_gate_shexp.weight", FS, H)
            matrix(p + "ffn_up_shexp.weight", FS, H)
            matrix(p + "ffn_down_shexp.weight", H, FS)
        else:
            matrix(p + "ffn_gate.weight", F, H)
            matrix(p + "ffn_up.weight", F, H)
            matrix(p + "ffn_down.weight", H, F)
    return plan


def float_matrix(seed, index, rows, cols, std, dtype, pool):
    """Normal values of std `std` as F16 or BF16 (uint16 words). Row chunks are drawn in
    parallel, each from a generator of its own (seeded by the file's seed, the tensor's index
    and the chunk's), so a 27B BF16 file is not bound to one core; F16 and BF16 files of one
    seed hold the same draws, BF16 rounded from them."""
    out = np.empty((rows, cols), dtype={Q.F32: np.float32, Q.F16: np.float16}.get(dtype, np.uint16))
    step = max(1, (1 << 22) // cols)

    def fill(chunk):
        r0 = chunk * step
        gen = np.random.Generator(np.random.SFC64(np.random.SeedSequence([seed, index, chunk])))
        x = gen.standard_normal((min(step, rows - r0), cols), dtype=np.float32)
        x *= std
        if dtype in (Q.F32, Q.F16):
            out[r0:r0 + len(x)] = x.astype(out.dtype)
        else:  # round to nearest even; the values are finite
            u = x.view(np.uint32)
            out[r0:r0 + len(x)] = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)

    list(pool.map(fill, range((rows + step - 1) // step)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size", choices=sorted(SIZES))
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--type", choices=list(FILE_TYPES), default="F16",
                    help="storage of the matrices (default F16); quantized types are written directly")
    ap.add_argument("--tokenizer", type=pathlib.Path, default=TOKENIZER,
                    help="tokenizer.json whose vocabulary the file carries (default: the tiny one)")
    ap.add_argument("--header-only", action="store_true",
                    help="write the metadata and tensor table; the data stays a hole (sparse file)")
    ap.add_argument("--layers", type=int, help="the size's shapes with this many layers")
    args = ap.parse_args()
    s = dict(SIZES[args.size])
    if args.layers:
        s["layers"] = args.layers
    moe = "experts" in s
    H, L = s["hidden"], s["layers"]
    v_heads, ROT_DIMS, K_HEADS, DK, VOCAB = s["v_heads"], s["rot_dims"], s["k_heads"], s["dk"], s["vocab"]
    rng = np.random.default_rng(args.seed)
    # Matrices draw from generators of their own, fast ones (SFC64); BF16 rounds the values of
    # the F16 file of the same seed.
    bulk = np.random.SFC64(args.seed)
    gen = np.random.Generator(np.random.SFC64(args.seed + 1))
    started = time.monotonic()

    plan = tensor_plan(s, rng)
    types = choose_types([(name, shape) for name, shape, _ in plan], L, args.type,
                         s.get("experts", 0))

    w = gguf.GGUFWriter(str(args.out), "qwen35moe" if moe else "qwen35")
    w.add_name(f"qwen35-{args.size}-shape-random")
    w.add_file_type(FILE_TYPES[args.type][1])
    if args.type not in ("F32", "F16"):  # as `hostlm quantize` writes (float files stay as they were)
        w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    w.add_context_length(262144)
    w.add_embedding_length(H)
    w.add_block_count(L)
    if moe:
        w.add_expert_count(s["experts"])
        w.add_expert_used_count(s["experts_used"])
        w.add_expert_feed_forward_length(s["expert_ffn"])
        w.add_expert_shared_feed_forward_length(s["shared_ffn"])
    else:
        w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["n_head"])
    w.add_head_count_kv(s["n_head_kv"])
    w.add_key_length(s["head_dim"])
    w.add_value_length(s["head_dim"])
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e7)
    w.add_rope_dimension_count(ROT_DIMS)
    w.add_rope_dimension_sections([ROT_DIMS // 6 + 1, ROT_DIMS // 6 + 1, ROT_DIMS // 2 - 2 * (ROT_DIMS // 6 + 1), 0])
    w.add_uint32(f"{w.arch}.full_attention_interval", INTERVAL)
    w.add_ssm_conv_kernel(CONV_K)
    w.add_ssm_state_size(DK)
    w.add_ssm_group_count(K_HEADS)
    w.add_ssm_time_step_rank(v_heads)
    w.add_ssm_inner_size(v_heads * DK)
    tokens, token_types, merges, eos = tokenizer_parts(VOCAB, args.tokenizer)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35")
    w.add_token_list(tokens)
    w.add_token_types(token_types)
    w.add_token_merges(merges)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(False)

    # Every tensor's info first (the header needs them), then the data one tensor at a time.
    for (name, shape, _), t in zip(plan, types):
        if t is None or t == Q.F32:
            w.add_tensor_info(name, shape, np.dtype(np.float32), 4 * int(np.prod(shape)))
        elif t in (Q.F16, Q.BF16):
            w.add_tensor_info(name, shape, np.dtype(np.float16), 2 * int(np.prod(shape)), raw_dtype=t)
        else:  # stacked experts: [E, rows, cols]
            *outer, cols = shape
            rows = int(np.prod(outer))
            bs, ts = gguf.GGML_QUANT_SIZES[t]
            w.add_tensor_info(name, (*outer, cols // bs * ts), np.dtype(np.uint8),
                              rows * cols // bs * ts, raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    if args.header_only:
        # The data region: each tensor padded to the alignment, after the padded table.
        w.fout[0].flush()
        pad = lambda n: gguf.GGUFWriter.ggml_pad(n, w.data_alignment)
        start = pad(w.fout[0].tell())
        size = start + sum(pad(info.nbytes) for info in w.tensors[0].values())
        w.close()
        os.truncate(args.out, size)
        print(f"wrote {args.out} (header only, {size / 2**30:.1f} GiB sparse, {args.type})",
              file=sys.stderr)
        return 0
    # The next tensor is drawn while this one is written: a 54 GB BF16 file is bound by the
    # disk, not by the draws.
    pool = concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1)
    ahead = concurrent.futures.ThreadPoolExecutor(1)

    def draw(index):
        (name, shape, spec), t = plan[index], types[index]
        if t is None:
            return spec()
        if t in (Q.F32, Q.F16, Q.BF16):  # stacked experts are drawn as one tall matrix
            rows = int(np.prod(shape[:-1]))
            return float_matrix(args.seed, index, rows, shape[-1], spec, t, pool).reshape(shape)
        rows = int(np.prod(shape[:-1]))
        return quantized_matrix(t, rows, shape[-1], spec, bulk, gen).reshape(*shape[:-1], -1)

    next_data = ahead.submit(draw, 0)
    for index in range(len(plan)):
        data = next_data.result()
        if index + 1 < len(plan):
            next_data = ahead.submit(draw, index + 1)
        w.write_tensor_data(data)
        del data
    ahead.shutdown()
    pool.shutdown()
    w.close()
    print(f"wrote {args.out} ({args.out.stat().st_size / 2**20:.0f} MiB, {args.type}) in "
          f"{time.monotonic() - started:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
