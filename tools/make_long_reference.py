#!/usr/bin/env python3
"""Reference logits far out in the context window, made by Hugging Face transformers.

Creates a tiny random Qwen3.5 (rope theta 1e7 and partial rotary as the released models,
two full-attention layers) and evaluates one sequence of N tokens (default 65,536) on the
GPU in float32 (sdpa attention, TF32 off everywhere), in chunks through transformers' own
KV/recurrent cache; a one-pass run over the first 8,192 tokens checks that the chunked
run agrees. Only a few windows of positions are kept, so the data stays small:

    OUT/models/tiny-long-f32/         HF folder (config.json, model.safetensors)
    OUT/reference/tiny-long-f32.json  sequence file, windows, versions, logit std
    OUT/reference/tiny-long-f32.tokens.i32   the N token ids, int32 LE
    OUT/reference/tiny-long-f32.<start>.f32  float32 LE logits [window, vocab] per window

The model is causal, so the logits of a window ending at position P depend only on the first
P + 1 tokens: a test may evaluate just that prefix (the CI test uses the short windows).

    python3 tools/make_long_reference.py --out tests/data [--tokens 65536] [--device cuda]
"""
import argparse
import json
import os

import torch

from make_reference import randomize  # same weight recipe as the short references

VOCAB = 1024
NAME = "tiny-long-f32"
CONFIG = dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
              num_attention_heads=4, num_key_value_heads=2, head_dim=64,
              linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
              linear_value_head_dim=16, linear_conv_kernel_dim=4, tie_word_embeddings=True,
              max_position_embeddings=262144,
              rope_parameters=dict(rope_type="default", rope_theta=10000000.0,
                                   partial_rotary_factor=0.25, mrope_section=[2, 3, 3],
                                   mrope_interleaved=True),
              layer_types=["linear_attention", "full_attention", "linear_attention",
                           "full_attention"])


def windows(n):
    """(start, length) of the kept positions: near the start, at 4K, 8K, 32K and the end."""
    wins = [(0, 16), (4096 - 32, 32), (8192 - 32, 32)]
    if n >= 32768:
        wins.append((32768 - 64, 64))
    if n > 32768:
        wins.append((n - 128, 128))
    return [(s, l) for s, l in wins if s + l <= n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/data")
    ap.add_argument("--tokens", type=int, default=65536)
    ap.add_argument("--chunk", type=int, default=4096, help="tokens per forward call")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")

    from transformers import Qwen3_5ForCausalLM, Qwen3_5TextConfig
    import transformers

    gen = torch.Generator().manual_seed(4321)
    model = Qwen3_5ForCausalLM(Qwen3_5TextConfig(**CONFIG)).float().eval()
    randomize(model, gen)
    folder = os.path.join(args.out, "models", NAME)
    model.save_pretrained(folder, safe_serialization=True)
    ref = Qwen3_5ForCausalLM.from_pretrained(folder, dtype=torch.float32,
                                             attn_implementation="sdpa").eval().to(args.device)

    tokens = torch.randint(0, VOCAB, (args.tokens,), generator=gen, dtype=torch.int32)
    refdir = os.path.join(args.out, "reference")
    os.makedirs(refdir, exist_ok=True)
    tokens.numpy().astype("<i4").tofile(os.path.join(refdir, f"{NAME}.tokens.i32"))

    record = {"model": NAME, "vocab": VOCAB, "n_tokens": args.tokens,
              "tokens_file": f"{NAME}.tokens.i32", "device": args.device,
              "gpu": torch.cuda.get_device_name() if args.device == "cuda" else None,
              "attention": "sdpa", "dtype": "float32", "tf32": False,
              "transformers": transformers.__version__, "torch": torch.__version__,
              "windows": []}
    with torch.no_grad():
        ids = tokens.long().unsqueeze(0).to(args.device)
        # One pass would need the full [n, n] attention matrix (sdpa falls back to its math
        # kernel with grouped KV heads), so the sequence goes through transformers' own cache
        # in chunks; only the hidden rows of the kept windows are collected.
        wins = windows(args.tokens)
        rows = {}
        cache = None
        for begin in range(0, args.tokens, args.chunk):
            end = min(begin + args.chunk, args.tokens)
            out = ref.model(input_ids=ids[:, begin:end], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            hidden = out.last_hidden_state[0]
            for start, length in wins:
                for p in range(max(start, begin), min(start + length, end)):
                    rows[p] = hidden[p - begin].clone()
        for start, length in wins:
            block = torch.stack([rows[p] for p in range(start, start + length)])
            logits = ref.lm_head(block).float().cpu().contiguous()
            fname = f"{NAME}.{start}.f32"
            logits.numpy().astype("<f4").tofile(os.path.join(refdir, fname))
            record["windows"].append({"start": start, "length": length, "logits_file": fname,
                                      "logit_std": float(logits.std())})
            print(f"window {start}+{length}: std {float(logits.std()):.4f}", flush=True)
        # Cross-check: one pass without cache over a prefix gives the same windows.
        n_check = min(8192, args.tokens)
        hidden = ref.model(input_ids=ids[:, :n_check], use_cache=False).last_hidden_state[0]
        worst = 0.0
        for start, length in wins:
            if start + length <= n_check:
                diff = (hidden[start:start + length] - torch.stack(
                    [rows[p] for p in range(start, start + length)])).abs().max()
                worst = max(worst, float(diff))
        record["one_pass_check"] = {"tokens": n_check, "max_abs_hidden_diff": worst}
        print("one-pass vs chunked, max |hidden diff|:", worst, flush=True)
    record["chunk"] = args.chunk
    with open(os.path.join(refdir, f"{NAME}.json"), "w") as f:
        json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
