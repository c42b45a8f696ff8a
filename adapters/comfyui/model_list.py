"""The models the Load model node offers: the hostlm store and model folders.

The store has Ollama's layout (ecosystem spec 1.7): `manifests/<host>/<namespace>/<model>/
<tag>` JSON files whose `application/vnd.ollama.image.model` layer names a GGUF blob in
`blobs/sha256-<hex>`. Its root is $HOSTLM_MODELS or ~/.hostlm/models; an Ollama store
($OLLAMA_MODELS or ~/.ollama/models) is read as well, as `hostlm` itself does.
Model folders: ComfyUI's `models/LLM` (registered with folder_paths when ComfyUI is there)
and the folders in $HOSTLM_MODEL_DIRS; they hold .gguf files and Hugging Face folders.
"""

import json
import logging
import os
import re
from dataclasses import dataclass

from .errors import HostLMError

log = logging.getLogger("hostlm")

PATH_CHOICE = "(use the path field)"  # first dropdown entry: the list may be empty
FOLDER_NAME = "LLM"  # folder_paths key; the folder LLM node packs already use
_MODEL_MEDIA = "application/vnd.ollama.image.model"
_SYSTEM_MEDIA = "application/vnd.ollama.image.system"
_DIGEST = re.compile(r"^sha256[:-]([0-9a-fA-F]{64})$")
_MAX_DEPTH = 3  # how deep model folders are searched
_reported = set()  # problems already logged: the list is rebuilt on every /object_info


@dataclass
class StoreModel:
    name: str  # display form, as `hostlm list` prints it
    weights: str  # the GGUF blob
    system: str  # the SYSTEM layer's text, "" when none


@dataclass
class ResolvedModel:
    """What a Load model node asked for, located."""

    label: str  # what the user chose, for messages
    path: str  # local file or folder; "" when only a server can know it
    server_name: str  # the name a server is asked for
    system: str = ""  # default system prompt (a store model's SYSTEM)


def store_roots():
    own = os.environ.get("HOSTLM_MODELS") or os.path.join(os.path.expanduser("~"), ".hostlm",
                                                           "models")
    ollama = os.environ.get("OLLAMA_MODELS") or os.path.join(os.path.expanduser("~"), ".ollama",
                                                              "models")
    roots = [own]
    if os.path.isdir(ollama) and os.path.realpath(ollama) != os.path.realpath(own):
        roots.append(ollama)
    return roots


def display_name(host, namespace, model, tag):
    if host.lower() == "registry.ollama.ai":
        if namespace.lower() == "library":
            return f"{model}:{tag}"
        return f"{namespace}/{model}:{tag}"
    return f"{host}/{namespace}/{model}:{tag}"


def _blob_path(root, digest):
    m = _DIGEST.match(digest or "")
    if not m:
        raise ValueError(f"invalid digest {digest!r}")
    return os.path.join(root, "blobs", "sha256-" + m.group(1).lower())


def _read_manifest(root, manifest_path, name):
    with open(manifest_path, "rb") as f:
        manifest = json.load(f)
    weights, system = "", ""
    for layer in manifest.get("layers", []):
        media = layer.get("mediaType", "")
        if media == _MODEL_MEDIA and not weights:
            weights = _blob_path(root, layer.get("digest"))
        elif media == _SYSTEM_MEDIA:
            with open(_blob_path(root, layer.get("digest")), encoding="utf-8") as f:
                system = f.read()
    if not weights:
        raise ValueError("no model (GGUF) layer")
    return StoreModel(name=name, weights=weights, system=system)


def list_store_models():
    """Store models by display name; a name in the own root hides the Ollama store's."""
    out = {}
    for root in store_roots():
        manifests = os.path.join(root, "manifests")
        if not os.path.isdir(manifests):
            continue
        for dirpath, dirnames, filenames in os.walk(manifests):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            parts = os.path.relpath(dirpath, manifests).split(os.sep)
            if len(parts) != 3:  # manifests sit exactly four levels down
                continue
            for tag in sorted(filenames):
                if tag.startswith("."):
                    continue  # temporary files of an unfinished write
                name = display_name(*parts, tag)
                if name in out:
                    continue
                try:
                    out[name] = _read_manifest(root, os.path.join(dirpath, tag), name)
                except (OSError, ValueError) as e:
                    problem = f"hostlm: skipping store model {name}: {e}"
                    if problem not in _reported:
                        _reported.add(problem)
                        log.warning(problem)
    return out


def model_dirs():
    dirs = []
    try:
        import folder_paths  # ComfyUI's; absent outside ComfyUI

        dirs.extend(folder_paths.get_folder_paths(FOLDER_NAME))
    except (ImportError, KeyError, AttributeError):
        pass
    for d in os.environ.get("HOSTLM_MODEL_DIRS", "").split(os.pathsep):
        if d:
            dirs.append(d)
    return dirs


def register_comfy_folder():
    """Adds models/LLM to ComfyUI's folder_paths (if ComfyUI is there and lacks it)."""
    try:
        import folder_paths
    except ImportError:
        return
    # Adds the default folder unless extra_model_paths.yaml or another pack already did.
    folder_paths.add_model_folder_path(FOLDER_NAME,
                                       os.path.join(folder_paths.models_dir, FOLDER_NAME))


def _is_hf_folder(path):
    try:
        names = os.listdir(path)
    except OSError:
        return False
    return "config.json" in names and any(n.endswith(".safetensors") for n in names)


def list_folder_models():
    """Models in the model folders, by path relative to their folder ('/' separated)."""
    out = {}
    for base in model_dirs():
        if not os.path.isdir(base):
            continue
        for dirpath, dirnames, filenames in os.walk(base, followlinks=True):
            rel = os.path.relpath(dirpath, base)
            depth = 0 if rel == "." else rel.count(os.sep) + 1
            if rel != "." and _is_hf_folder(dirpath):
                out.setdefault(rel.replace(os.sep, "/"), dirpath)
                dirnames[:] = []
                continue
            dirnames[:] = sorted(d for d in dirnames if not d.startswith(".")) \
                if depth < _MAX_DEPTH else []
            for f in sorted(filenames):
                # mmproj files are vision projectors, not models of their own
                if f.endswith(".gguf") and not f.lower().startswith("mmproj"):
                    name = f if rel == "." else os.path.join(rel, f).replace(os.sep, "/")
                    out.setdefault(name, os.path.join(dirpath, f))
    return out


def choices():
    """The dropdown: the path entry first, then store models, then folder models."""
    names = [PATH_CHOICE]
    names.extend(sorted(list_store_models()))
    names.extend(n for n in sorted(list_folder_models()) if n not in names)
    return names


def resolve(choice, path, for_server=False):
    """Finds what the node asked for. `path` wins when not empty: a file, a folder or a store
    name. A server resolves names itself, so for_server passes unknown names through."""
    text = (path or "").strip()
    if text:
        local = os.path.expanduser(text)
        if os.path.exists(local):
            # A server on this machine loads paths too (`hostlm serve` does).
            local = os.path.abspath(local)
            return ResolvedModel(label=text, path=local, server_name=local)
        wanted = text
    elif choice and choice != PATH_CHOICE:
        wanted = choice
    else:
        raise HostLMError("choose a model in the list or type a path or store name in 'path'")
    # Store names compare case-insensitively and default to the tag "latest", as Ollama's.
    store = {name.lower(): m for name, m in list_store_models().items()}
    key = wanted.lower()
    found = store.get(key) or (store.get(key + ":latest") if ":" not in key.split("/")[-1]
                               else None)
    if found is not None:
        return ResolvedModel(label=wanted, path=found.weights, server_name=found.name,
                             system=found.system)
    folders = list_folder_models()
    if wanted in folders:
        return ResolvedModel(label=wanted, path=folders[wanted], server_name=folders[wanted])
    if for_server:
        return ResolvedModel(label=wanted, path="", server_name=wanted)
    roots = ", ".join(store_roots())
    dirs = ", ".join(model_dirs()) or "none"
    raise HostLMError(
        f"model '{wanted}' not found: it is not a file or folder, not in the hostlm store "
        f"({roots}) and not in the model folders ({dirs})")
