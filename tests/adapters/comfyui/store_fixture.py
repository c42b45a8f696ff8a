"""A hostlm model store for the tests, written in Ollama's layout (ecosystem spec 1.7):
the tiny model converted to GGUF by the build's `hostlm convert`, stored as a blob, and
manifests that name it."""

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass

SYSTEM_TEXT = "You are a lighthouse keeper."
MODEL_MEDIA = "application/vnd.ollama.image.model"


def build_dir():
    build = os.environ.get("HOSTLM_BUILD_DIR", "")
    if build.startswith("set:"):  # the form ctest's ENVIRONMENT_MODIFICATION uses
        build = build[4:]
    if not build and os.environ.get("HOSTLM_LIBRARY"):
        build = os.path.dirname(os.path.dirname(os.environ["HOSTLM_LIBRARY"]))
    if not build or not os.path.isdir(build):
        raise SystemExit("set HOSTLM_BUILD_DIR to a hostlm build folder (bin/hostlm, "
                         "lib/libhostlm.so)")
    return build


@dataclass
class Store:
    root: str
    weights: str  # the GGUF blob
    gguf: str  # the same GGUF outside the store


def _put_blob(root, data):
    digest = hashlib.sha256(data).hexdigest()
    path = os.path.join(root, "blobs", "sha256-" + digest)
    with open(path, "wb") as f:
        f.write(data)
    return {"digest": "sha256:" + digest, "size": len(data)}


def _write_manifest(root, name, config, layers):
    folder = os.path.join(root, "manifests", "registry.ollama.ai", "library", name)
    os.makedirs(folder, exist_ok=True)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
        "config": dict(config, mediaType="application/vnd.docker.container.image.v1+json"),
        "layers": layers,
    }
    with open(os.path.join(folder, "latest"), "w", encoding="utf-8") as f:
        f.write(json.dumps(manifest) + "\n")


def make_store(root, hf_folder, build):
    os.makedirs(os.path.join(root, "blobs"), exist_ok=True)
    gguf = os.path.join(os.path.dirname(root), "tiny.gguf")
    subprocess.run([os.path.join(build, "bin", "hostlm"), "convert", hf_folder, gguf,
                    "--type", "f32"], check=True, capture_output=True, timeout=300)
    with open(gguf, "rb") as f:
        model = _put_blob(root, f.read())
    config = _put_blob(root, (json.dumps({
        "model_format": "gguf", "model_family": "qwen35", "model_families": ["qwen35"],
        "renderer": "qwen3.5", "parser": "qwen3.5", "architecture": "amd64",
        "os": "linux"}) + "\n").encode())
    model_layer = dict(model, mediaType=MODEL_MEDIA, **{"from": "tiny.gguf"})
    system_layer = dict(_put_blob(root, SYSTEM_TEXT.encode()),
                        mediaType="application/vnd.ollama.image.system")
    _write_manifest(root, "tiny", config, [model_layer])
    _write_manifest(root, "tiny-system", config, [model_layer, system_layer])
    _write_manifest(root, "broken", config, [system_layer])  # no weights: not listed
    weights = os.path.join(root, "blobs", "sha256-" + model["digest"].split(":")[1])
    return Store(root=root, weights=weights, gguf=gguf)
