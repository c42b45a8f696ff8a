#!/usr/bin/env python3
"""Writes a random-weight Qwen3.5 GGUF with the real shapes of a released size, for benchmarks.

Speed depends on shapes, not values, so these files stand in for the real checkpoints
(which cannot be downloaded here). Sizes are those of shared/spec/qwen35.md section 1.1;
tensor names, shapes and metadata keys are those `hostlm convert` writes and llama.cpp
reads. Matrices are stored as F16 (the base that `hostlm quantize` turns into Q4_K_M, Q8_0,
...), the 1-D tensors and the conv kernel as F32. The tokenizer is the tiny test models'
2048-token vocabulary padded with filler tokens to the real 248320 rows, so that llama.cpp
loads the file too.

  python3 tools/make_shape_gguf.py 0.8b OUT.gguf [--seed S]
  python3 tools/make_shape_gguf.py 2b OUT.gguf
  python3 tools/make_shape_gguf.py 9b OUT.gguf      (untied output head, as the release)
  python3 tools/make_shape_gguf.py test256 OUT.gguf   (a 5 MB model for tests)

--tokenizer FILE.json puts another vocabulary in the file instead, padded the same way: the
real Qwen3.5 one (`tools/make_tokenizer_reference.py --qwen35-real DIR` writes it) makes the
grammar-constrained benchmarks (`hostlm bench --format`) run over the real 248K tokens.
"""

import argparse
import json
import pathlib
import sys

import numpy as np
import gguf

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "tests" / "data" / "models" / "tiny-tied-f32" / "tokenizer.json"

# Released dense sizes (hidden, ffn, layers, query / KV heads, GDN value heads); the rest is
# common to every release. "test256" is a small model whose rows are whole K-quant
# super-blocks, for the quantized-logits tests.
COMMON = dict(head_dim=256, rot_dims=64, k_heads=16, dk=128, vocab=248320)
SIZES = {
    "0.8b": dict(COMMON, hidden=1024, ffn=3584, layers=24, n_head=8, n_head_kv=2, v_heads=16),
    "2b": dict(COMMON, hidden=2048, ffn=6144, layers=24, n_head=8, n_head_kv=2, v_heads=16),
    "9b": dict(COMMON, hidden=4096, ffn=12288, layers=32, n_head=16, n_head_kv=4, v_heads=32,
               untied=True),
    "test256": dict(head_dim=64, rot_dims=16, k_heads=2, dk=64, vocab=2048, hidden=256, ffn=512,
                    layers=4, n_head=4, n_head_kv=1, v_heads=4, std=0.02),
}
CONV_K = 4
INTERVAL = 4


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
    tokens += [f"<filler_{i}>" for i in range(n_real, vocab_size)]
    types += [gguf.TokenType.UNUSED] * (vocab_size - n_real)
    merges = data["model"]["merges"]
    merges = [m if isinstance(m, str) else " ".join(m) for m in merges]
    eos = next((a["id"] for a in data.get("added_tokens", []) if a["content"] == "<|im_end|>"), n_real - 1)
    return tokens, types, merges, eos


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("size", choices=sorted(SIZES))
    ap.add_argument("out", type=pathlib.Path)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tokenizer", type=pathlib.Path, default=TOKENIZER,
                    help="tokenizer.json whose vocabulary the file carries (default: the tiny one)")
    args = ap.parse_args()
    s = SIZES[args.size]
    H, F, L = s["hidden"], s["ffn"], s["layers"]
    n_head, n_head_kv, v_heads = s["n_head"], s["n_head_kv"], s["v_heads"]
    HEAD_DIM, ROT_DIMS, K_HEADS, DK, VOCAB = s["head_dim"], s["rot_dims"], s["k_heads"], s["dk"], s["vocab"]
    DV = DK
    key_dim, value_dim = K_HEADS * DK, v_heads * DV
    conv_dim = 2 * key_dim + value_dim
    rng = np.random.default_rng(args.seed)

    w = gguf.GGUFWriter(str(args.out), "qwen35")
    w.add_name(f"qwen35-{args.size}-shape-random")
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    w.add_context_length(262144)
    w.add_embedding_length(H)
    w.add_block_count(L)
    w.add_feed_forward_length(F)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1e7)
    w.add_rope_dimension_count(ROT_DIMS)
    w.add_rope_dimension_sections([ROT_DIMS // 6 + 1, ROT_DIMS // 6 + 1, ROT_DIMS // 2 - 2 * (ROT_DIMS // 6 + 1), 0])
    w.add_uint32("qwen35.full_attention_interval", INTERVAL)
    w.add_ssm_conv_kernel(CONV_K)
    w.add_ssm_state_size(DK)
    w.add_ssm_group_count(K_HEADS)
    w.add_ssm_time_step_rank(v_heads)
    w.add_ssm_inner_size(value_dim)
    tokens, types, merges, eos = tokenizer_parts(VOCAB, args.tokenizer)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("qwen35")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_eos_token_id(eos)
    w.add_add_bos_token(False)

    def matrix(name, rows, cols, scale=None):
        # PyTorch order [rows (out), cols (in)]; values with std 1/sqrt(cols) keep the
        # activations of a random network in range.
        # The test model uses the small std of Hugging Face's initializer, which keeps the
        # random network close to linear, so that quantization errors are not amplified.
        std = scale if scale is not None else s.get("std", 1.0 / np.sqrt(cols))
        data = (rng.standard_normal((rows, cols), dtype=np.float32) * std).astype(np.float16)
        w.add_tensor(name, data)

    def vector(name, values):
        w.add_tensor(name, np.asarray(values, dtype=np.float32))

    def norm(name, n):
        vector(name, 1.0 + 0.1 * rng.standard_normal(n, dtype=np.float32))

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
            vector(p + "ssm_conv1d.weight", 0.5 * rng.standard_normal((conv_dim, CONV_K), dtype=np.float32))
            vector(p + "ssm_dt.bias", 0.1 * rng.standard_normal(v_heads, dtype=np.float32))
            vector(p + "ssm_a", -np.exp(0.5 * rng.standard_normal(v_heads, dtype=np.float32)))
            norm(p + "ssm_norm.weight", DV)
            matrix(p + "ssm_out.weight", H, value_dim)
        matrix(p + "ffn_gate.weight", F, H)
        matrix(p + "ffn_up.weight", F, H)
        matrix(p + "ffn_down.weight", H, F)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()
    print(f"wrote {args.out} ({args.out.stat().st_size / 2**20:.0f} MiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
