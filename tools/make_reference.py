#!/usr/bin/env python3
"""Create tiny random Qwen3.5 checkpoints and reference logits with Hugging Face transformers.

The outputs under tests/data/ are the ground truth the C++ tests compare against; they are
made by transformers, never by hostlm. Run where torch + transformers (>= 5, with qwen3_5)
are installed:

    python3 tools/make_reference.py --out tests/data [--only NAME ...]

Layout written:
    OUT/models/<name>/config.json, model.safetensors      (HF folder, as save_pretrained writes it)
    OUT/reference/<name>.json                              (token sequences, shapes, which positions)
    OUT/reference/<name>.<seq>.f32                         (float32 LE logits, [n_positions, vocab])
"""
import argparse
import json
import math
import os

import torch
from safetensors.torch import load_file, save_file

VOCAB = 2048

# Each model exercises different parts of the spec: both layer kinds, GQA > 1, partial rotary,
# Hv > Hk (value-head permutation), tied/untied, irregular layer_types, dk != dv, dtypes,
# the nested text_config of the ConditionalGeneration checkpoints.
MODELS = {
    "tiny-tied-f32": dict(
        arch="causal", dtype=torch.float32,
        cfg=dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=160, num_hidden_layers=4,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                 linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                 linear_value_head_dim=16, linear_conv_kernel_dim=4, tie_word_embeddings=True,
                 rope_parameters=dict(rope_type="default", rope_theta=10000000.0,
                                      partial_rotary_factor=0.25, mrope_section=[1, 1, 2],
                                      mrope_interleaved=True),
                 full_attention_interval=4)),
    "tiny-untied-bf16": dict(
        arch="causal", dtype=torch.bfloat16,
        cfg=dict(vocab_size=VOCAB, hidden_size=96, intermediate_size=192, num_hidden_layers=6,
                 num_attention_heads=4, num_key_value_heads=1, head_dim=48,
                 linear_num_key_heads=2, linear_num_value_heads=6, linear_key_head_dim=16,
                 linear_value_head_dim=16, linear_conv_kernel_dim=4, tie_word_embeddings=False,
                 rope_parameters=dict(rope_type="default", rope_theta=10000000.0,
                                      partial_rotary_factor=0.5, mrope_section=[4, 4, 4],
                                      mrope_interleaved=True),
                 layer_types=["linear_attention", "full_attention", "linear_attention",
                              "linear_attention", "linear_attention", "full_attention"],
                 full_attention_interval=4)),
    "tiny-vl-dkdv-f16": dict(
        arch="conditional", dtype=torch.float16,
        cfg=dict(vocab_size=VOCAB, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                 num_attention_heads=2, num_key_value_heads=2, head_dim=32,
                 linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                 linear_value_head_dim=24, linear_conv_kernel_dim=4, tie_word_embeddings=True,
                 rope_parameters=dict(rope_type="default", rope_theta=10000000.0,
                                      partial_rotary_factor=0.25, mrope_section=[1, 1, 2],
                                      mrope_interleaved=True),
                 full_attention_interval=2)),
    # Qwen3.5-MoE (qwen35moe): routed experts (softmax, top-k, renormalised) plus the shared
    # expert behind its sigmoid gate, in every layer.
    "tiny-moe-f32": dict(
        arch="moe-causal", dtype=torch.float32, seed=4321,
        cfg=dict(vocab_size=VOCAB, hidden_size=64, num_hidden_layers=4,
                 num_attention_heads=4, num_key_value_heads=2, head_dim=32,
                 linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=16,
                 linear_value_head_dim=16, linear_conv_kernel_dim=4, tie_word_embeddings=False,
                 num_experts=8, num_experts_per_tok=3, moe_intermediate_size=64,
                 shared_expert_intermediate_size=96,
                 rope_parameters=dict(rope_type="default", rope_theta=10000000.0,
                                      partial_rotary_factor=0.25, mrope_section=[1, 1, 2],
                                      mrope_interleaved=True),
                 # The released interval: llama.cpp's converter writes 4 whatever the
                 # checkpoint's layer_types say, so only this layout converts faithfully there.
                 full_attention_interval=4)),
}


def randomize(model, gen):
    """Replace the tiny init with weights that make every path matter numerically."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "visual" in name:
                continue
            if name.endswith("A_log"):
                p.copy_(torch.rand(p.shape, generator=gen) * 2.0 - 1.0)
            elif name.endswith("dt_bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            elif name.endswith("linear_attn.norm.weight"):
                p.copy_(1.0 + torch.randn(p.shape, generator=gen) * 0.2)
            elif name.endswith("norm.weight"):  # zero-centred RMSNorm weights
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen))
            elif "conv1d" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            elif p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1]))
            elif p.dim() == 3 and "experts" in name:  # [E, out, in] stacked expert matrices
                p.copy_(torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[2]))
            else:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)


def build(name, spec, out, gen):
    from transformers import (Qwen3_5Config, Qwen3_5ForCausalLM,
                              Qwen3_5ForConditionalGeneration, Qwen3_5TextConfig)
    cfg = dict(spec["cfg"])
    if spec["arch"] == "moe-causal":
        from transformers import Qwen3_5MoeForCausalLM, Qwen3_5MoeTextConfig
        config = Qwen3_5MoeTextConfig(**cfg)
        model = Qwen3_5MoeForCausalLM(config)
    elif spec["arch"] == "causal":
        config = Qwen3_5TextConfig(**cfg)
        model = Qwen3_5ForCausalLM(config)
    else:
        vision = dict(depth=1, hidden_size=32, intermediate_size=64, num_heads=2,
                      out_hidden_size=cfg["hidden_size"], num_position_embeddings=16,
                      patch_size=4, spatial_merge_size=2, temporal_patch_size=2)
        config = Qwen3_5Config(text_config=cfg, vision_config=vision,
                               tie_word_embeddings=cfg["tie_word_embeddings"])
        model = Qwen3_5ForConditionalGeneration(config)
    model = model.float().eval()
    randomize(model, gen)
    folder = os.path.join(out, "models", name)
    model.to(spec["dtype"]).save_pretrained(folder, safe_serialization=True)
    if spec["arch"] == "conditional":
        # Released checkpoints carry an MTP block that transformers ignores; the loader must
        # tolerate it. Add a small one so the tests see such tensors.
        path = os.path.join(folder, "model.safetensors")
        tensors = load_file(path)
        h = cfg["hidden_size"]
        tensors["mtp.fc.weight"] = torch.randn(h, 2 * h, generator=gen).to(spec["dtype"])
        tensors["mtp.norm.weight"] = torch.zeros(h).to(spec["dtype"])
        save_file(tensors, path, metadata={"format": "pt"})
    # Reference: weights as stored (rounded to their dtype), arithmetic in float32 on the CPU.
    if spec["arch"] == "moe-causal":
        from transformers import Qwen3_5MoeForCausalLM as cls
    else:
        cls = Qwen3_5ForCausalLM if spec["arch"] == "causal" else Qwen3_5ForConditionalGeneration
    ref = cls.from_pretrained(folder, dtype=torch.float32).eval()
    return ref


def sequences(gen):
    short = [1, 17, 42, 1999, 5, 5, 300]
    mid = torch.randint(0, VOCAB, (100,), generator=gen).tolist()
    long = torch.randint(0, VOCAB, (300,), generator=gen).tolist()
    return {"short": (short, list(range(len(short)))),
            "mid": (mid, list(range(len(mid)))),
            "long": (long, list(range(0, 300, 23)) + [296, 297, 298, 299])}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/data")
    ap.add_argument("--only", nargs="*", help="write only these models (the others' files stay)")
    args = ap.parse_args()
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(1234)
    os.makedirs(os.path.join(args.out, "reference"), exist_ok=True)
    import transformers
    skipped_shared = False
    for name, spec in MODELS.items():
        # The first three models draw from one generator in turn (as when they were written);
        # a model with a "seed" has its own, so it comes out the same whichever others are
        # written, and --only can add it without touching their files.
        if args.only and name not in args.only:
            skipped_shared = skipped_shared or "seed" not in spec
            continue
        if skipped_shared and "seed" not in spec:
            raise SystemExit(f"{name} shares the generator with a model --only skipped")
        own = torch.Generator().manual_seed(spec["seed"]) if "seed" in spec else gen
        ref = build(name, spec, args.out, own)
        seqs = sequences(own)
        record = {"model": name, "vocab": VOCAB, "transformers": transformers.__version__,
                  "torch": torch.__version__, "sequences": {}}
        with torch.no_grad():
            for key, (tokens, positions) in seqs.items():
                logits = ref(input_ids=torch.tensor([tokens]), use_cache=False).logits[0]
                sel = logits[positions].float().contiguous()
                fname = f"{name}.{key}.f32"
                sel.numpy().astype("<f4").tofile(os.path.join(args.out, "reference", fname))
                record["sequences"][key] = {"tokens": tokens, "positions": positions,
                                            "logits_file": fname,
                                            "logit_std": float(logits.std())}
            prompt = seqs["short"][0]
            greedy = ref.generate(torch.tensor([prompt]), max_new_tokens=16, do_sample=False,
                                  min_new_tokens=16)
            record["greedy"] = {"prompt": prompt, "generated": greedy[0, len(prompt):].tolist()}
        with open(os.path.join(args.out, "reference", f"{name}.json"), "w") as f:
            json.dump(record, f, indent=1)
        print(name, "ok", {k: v["logit_std"] for k, v in record["sequences"].items()})


if __name__ == "__main__":
    main()
