#!/usr/bin/env python3
"""Make a small Qwen3.5-style tokenizer for the tiny test models.

Takes the real Qwen3 tokenizer (../shared/data/qwen3-tokenizer, Apache-2.0), keeps its first
VOCAB - n_added byte-level BPE tokens and the merges that stay inside them, renumbers the
added/special tokens after them, and switches the pre-tokenizer to the Qwen3.5 regex
(letters absorb combining marks; spec section 5.2). The chat template is the real Qwen3.5
one (../shared/data/qwen35/chat_template.jinja). The result loads in Hugging Face
`tokenizers`, which this script checks.

    python3 tools/make_tiny_tokenizer.py --vocab 2048 --out tests/data/models/tiny-tied-f32
"""
import argparse
import json
import os

QWEN35_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}"
                r"| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    shared = os.path.join(here, "..", "..", "shared", "data")
    ap = argparse.ArgumentParser()
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--out", required=True, nargs="+")
    args = ap.parse_args()

    src = json.load(open(os.path.join(shared, "qwen3-tokenizer", "tokenizer.json"), encoding="utf-8"))
    cfg = json.load(open(os.path.join(shared, "qwen3-tokenizer", "tokenizer_config.json"), encoding="utf-8"))
    template = open(os.path.join(shared, "qwen35", "chat_template.jinja"), encoding="utf-8").read()

    added = src["added_tokens"]
    n_base = args.vocab - len(added)
    vocab = {tok: i for tok, i in src["model"]["vocab"].items() if i < n_base}
    merges = []
    for m in src["model"]["merges"]:
        a, b = m if isinstance(m, list) else m.split(" ", 1)
        if a in vocab and b in vocab and a + b in vocab:
            merges.append([a, b])
    renumber = {}
    new_added = []
    for k, tok in enumerate(added):
        new_id = n_base + k
        renumber[str(tok["id"])] = str(new_id)
        new_added.append(dict(tok, id=new_id))

    out = dict(src)
    out["added_tokens"] = new_added
    out["model"] = dict(src["model"], vocab=vocab, merges=merges)
    out["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": QWEN35_REGEX}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}]}

    config = dict(cfg)
    config["added_tokens_decoder"] = {renumber[k]: v for k, v in cfg["added_tokens_decoder"].items()}
    config["chat_template"] = template
    config["model_max_length"] = 262144

    from tokenizers import Tokenizer
    for folder in args.out:
        with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
            json.dump(out, f, ensure_ascii=False)
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, ensure_ascii=False, indent=1)
        tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        ids = tok.encode("<|im_start|>user\nHello, wörld! 12345 <think>\n</think><|im_end|>").ids
        assert max(ids) < args.vocab and tok.decode(ids, skip_special_tokens=False).startswith("<|im_start|>user")
        print(folder, "vocab", tok.get_vocab_size(), "merges", len(merges), "sample", ids)


if __name__ == "__main__":
    main()
