#!/usr/bin/env python3
"""What llama.cpp's converter writes for a checkpoint, as a small JSON manifest, and a check of
another GGUF against it.

    make: runs convert_hf_to_gguf.py of a llama.cpp checkout (never part of this repository)
          on an HF folder and records the GGUF's model metadata and, per tensor, its shape,
          type and the SHA-256 of its bytes:
        python3 tools/llama_convert_manifest.py make LLAMA_CPP_DIR HF_FOLDER OUT.json \
            [--outtype f32] [--commit ID]   (ID: the checkout's commit, if it is no git work tree)
    record: the manifest of a GGUF llama.cpp wrote otherwise (e.g. llama-quantize's output):
        python3 tools/llama_convert_manifest.py record FILE.gguf OUT.json --made-by TEXT
    check: compares a GGUF (e.g. the one `hostlm convert` wrote) with a manifest; exit 1 and
          the differences if any:
        python3 tools/llama_convert_manifest.py check FILE.gguf MANIFEST.json

The tiny test checkpoints carry a cut-down tokenizer whose pre-tokenizer hash llama.cpp's table
does not know, so `make` answers that lookup with "qwen35" (the real models' value). The
tokenizer keys and llama.cpp's informational general.* keys are left out of the manifest.
Needs the `gguf` package (the checkout's gguf-py for `make`); `make` also torch and
transformers.
"""
import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile

SKIPPED_KEYS = ("tokenizer.", "general.name", "general.size_label", "general.type",
                "general.quantization_version", "GGUF.")


def manifest_of(path):
    import numpy as np
    from gguf import GGUFReader
    reader = GGUFReader(path)
    meta = {}
    for key, field in reader.fields.items():
        if key.startswith(SKIPPED_KEYS):
            continue
        value = field.contents()
        meta[key] = [float(v) if isinstance(v, float) else v for v in value] \
            if isinstance(value, list) else value
    tensors = {}
    for t in reader.tensors:
        data = np.ascontiguousarray(t.data)
        tensors[t.name] = {"ne": [int(n) for n in t.shape], "type": t.tensor_type.name,
                           "sha256": hashlib.sha256(data.tobytes()).hexdigest()}
    return {"metadata": meta, "tensors": tensors}


CONVERT = """
import runpy, sys
sys.path[:0] = [{root!r}, {root!r} + "/gguf-py"]
import conversion.base as base
base.TextModel.get_vocab_base_pre = lambda self, tokenizer: "qwen35"
sys.argv = ["convert_hf_to_gguf.py"] + {args!r}
runpy.run_path({root!r} + "/convert_hf_to_gguf.py", run_name="__main__")
"""


def make(llama_dir, hf_folder, out_json, outtype, commit):
    root = str(pathlib.Path(llama_dir).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        gguf_path = str(pathlib.Path(tmp) / "model.gguf")
        args = [str(hf_folder), "--outtype", outtype, "--no-mtp", "--outfile", gguf_path]
        subprocess.run([sys.executable, "-c", CONVERT.format(root=root, args=args)], check=True)
        sys.path[:0] = [root + "/gguf-py"]
        manifest = manifest_of(gguf_path)
    commit = commit or subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                                      capture_output=True, text=True).stdout.strip()
    manifest["made_by"] = f"llama.cpp convert_hf_to_gguf.py ({commit or 'unknown commit'}), " \
                          f"--outtype {outtype} --no-mtp, via tools/llama_convert_manifest.py"
    pathlib.Path(out_json).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    print(f"{out_json}: {len(manifest['tensors'])} tensors, {len(manifest['metadata'])} keys")


def check(gguf_path, manifest_json):
    want = json.loads(pathlib.Path(manifest_json).read_text())
    got = manifest_of(gguf_path)
    problems = []
    for key, value in want["metadata"].items():
        if got["metadata"].get(key) != value:
            problems.append(f"metadata {key}: {got['metadata'].get(key)!r}, llama.cpp {value!r}")
    for key in sorted(set(got["metadata"]) - set(want["metadata"])):
        problems.append(f"metadata {key} is not in llama.cpp's file")
    for name, t in want["tensors"].items():
        mine = got["tensors"].get(name)
        if mine is None:
            problems.append(f"tensor {name} is missing")
        elif mine != t:
            problems.append(f"tensor {name}: {mine}, llama.cpp {t}")
    for name in sorted(set(got["tensors"]) - set(want["tensors"])):
        problems.append(f"tensor {name} is not in llama.cpp's file")
    for p in problems:
        print(p)
    print(f"{gguf_path}: {len(want['tensors'])} tensors and {len(want['metadata'])} keys checked, "
          f"{len(problems)} differences")
    return 1 if problems else 0


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == "make":
        def option(name, default):
            return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default
        make(sys.argv[2], sys.argv[3], sys.argv[4], option("--outtype", "f32"),
             option("--commit", ""))
        return 0
    if len(sys.argv) == 6 and sys.argv[1] == "record" and sys.argv[4] == "--made-by":
        manifest = manifest_of(sys.argv[2])
        manifest["made_by"] = sys.argv[5]
        pathlib.Path(sys.argv[3]).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
        print(f"{sys.argv[3]}: {len(manifest['tensors'])} tensors, {len(manifest['metadata'])} keys")
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "check":
        return check(sys.argv[2], sys.argv[3])
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
