"""Loaded models and their lifetime.

A HOSTLM_MODEL link carries a ModelHandle: the load settings plus the loaded model (or the
server it lives on). Handles with the same settings are shared, so re-running a workflow, or
two Load nodes asking for the same model, never loads it twice. Lifetime:
- inside ComfyUI the registry keeps every loaded model until ComfyUI frees models (the
  /free route, "Unload models", or memory pressure while it loads its own), through the hook
  in comfy_hooks; a handle still held by a cached node output then loads again on its next
  use;
- elsewhere the registry holds handles weakly and a finalizer frees the weights when the last
  reference goes.
"""

import logging
import threading
import time
import weakref
from dataclasses import dataclass

from . import comfy_hooks
from .errors import HostLMError
from .hostlm_capi import CModel
from .ollama_client import OllamaClient

log = logging.getLogger("hostlm")


@dataclass(frozen=True)
class LoadSpec:
    label: str  # what the user chose, for messages
    path: str  # local weights; "" when a server loads the model
    server_url: str  # "" runs in this process
    server_name: str
    backend: str = "auto"
    gpu_layers: int = -1
    context: int = 4096
    threads: int = 0
    system: str = ""  # default system prompt from the store
    cpu_moe_layers: int = 0  # experts of the first N layers on the CPU (-1: all)
    state_type: str = "f32"  # the recurrent states' elements: f32, f16 or bf16


def _ollama_messages(messages):
    """OpenAI-style history as Ollama's /api/chat wants it: reasoning goes in "thinking"."""
    out = []
    for m in messages:
        m = dict(m)
        reasoning = m.pop("reasoning_content", None)
        if reasoning:
            m["thinking"] = reasoning
        out.append(m)
    return out


def _free_slot(slot):
    # Runs from the finalizer: must not reference the handle itself.
    model = slot[0]
    slot[0] = None
    if model is not None:
        model.close()


class ModelHandle:
    def __init__(self, spec, on_loaded=None):
        self.spec = spec
        self._lock = threading.RLock()
        self._slot = [None]  # the CModel, in a list the finalizer can empty
        self._client = OllamaClient(spec.server_url) if spec.server_url else None
        self._server_checked = False
        self._on_loaded = on_loaded
        weakref.finalize(self, _free_slot, self._slot)

    @property
    def remote(self):
        return self._client is not None

    @property
    def loaded(self):
        return self._server_checked if self.remote else self._slot[0] is not None

    @property
    def backend(self):
        """"cpu"/"cuda" of the loaded model, "server" for a remote one, "" when released."""
        if self.remote:
            return "server"
        model = self._slot[0]
        return model.backend if model is not None else ""

    def describe(self):
        where = f"server {self.spec.server_url}" if self.remote else self.backend or "released"
        return f"{self.spec.label} ({where}, context {self.spec.context})"

    def _backend_to_ask(self):
        s = self.spec
        if s.gpu_layers == 0:
            if s.backend == "cuda":
                raise HostLMError("backend 'cuda' with gpu_layers 0 asks for the GPU and for no "
                                  "GPU layers: choose backend 'cpu' or gpu_layers -1")
            return "cpu"
        return s.backend

    def ensure_loaded(self):
        with self._lock:
            if self.loaded:
                return
            if self.remote:
                self._client.check_model(self.spec.server_name)
                self._server_checked = True
            else:
                self._load_local()
            if self._on_loaded is not None:
                self._on_loaded(self)

    def _load_local(self):
        s = self.spec
        started = time.monotonic()
        # Between 0 and the layer count the library splits the model (the first layers on
        # the CPU, the rest on the GPU) and prints the split.
        model = CModel(s.path, backend=self._backend_to_ask(), threads=s.threads,
                       context=s.context, gpu_layers=s.gpu_layers,
                       cpu_moe_layers=s.cpu_moe_layers, state_type=s.state_type)
        if s.gpu_layers > 0 and model.backend != "cuda":
            log.warning("hostlm: %s asked for %d GPU layers but runs on %s", s.label,
                        s.gpu_layers, model.backend)
        self._slot[0] = model
        log.info("hostlm: loaded %s on %s in %.2f s", s.label, model.backend,
                 time.monotonic() - started)

    def release(self):
        """Frees the weights now (a server is asked to unload). Safe to call twice."""
        with self._lock:
            if self.remote:
                if self._server_checked:
                    self._server_checked = False
                    try:
                        self._client.unload(self.spec.server_name)
                        log.info("hostlm: %s unloaded on %s", self.spec.label,
                                 self.spec.server_url)
                    except HostLMError as e:
                        log.warning("hostlm: unloading %s: %s", self.spec.label, e)
                return
            if self._slot[0] is not None:
                _free_slot(self._slot)
                log.info("hostlm: released %s", self.spec.label)

    def chat(self, messages, settings, on_text=None, on_progress=None):
        with self._lock:
            self.ensure_loaded()
            if self.remote:
                options = {"num_ctx": self.spec.context}
                if self.spec.gpu_layers >= 0:
                    options["num_gpu"] = self.spec.gpu_layers
                if self.spec.threads > 0:
                    options["num_thread"] = self.spec.threads
                return self._client.chat(self.spec.server_name, _ollama_messages(messages),
                                         settings, options, on_text, on_progress)
            return self._slot[0].chat(messages, settings, on_text, on_progress)


class Registry:
    def __init__(self):
        self._lock = threading.Lock()
        self._handles = weakref.WeakValueDictionary()  # every live handle, by its settings
        self._kept = {}  # strong references while ComfyUI manages the lifetime
        self.keep_until_freed = False

    def _keep(self, handle):
        if self.keep_until_freed:
            with self._lock:
                self._kept[handle.spec] = handle

    def get(self, spec):
        """The loaded model for these settings, loading it when needed."""
        with self._lock:
            handle = self._handles.get(spec)
            if handle is None:
                handle = ModelHandle(spec, on_loaded=self._keep)
                self._handles[spec] = handle
        handle.ensure_loaded()
        return handle

    def handles(self):
        with self._lock:
            return list(self._handles.values())

    def release_all(self):
        for handle in self.handles():
            handle.release()
        with self._lock:
            self._kept.clear()

    def release_backend(self, backend):
        for handle in self.handles():
            if handle.backend == backend:
                handle.release()
                with self._lock:
                    self._kept.pop(handle.spec, None)


registry = Registry()
registry.keep_until_freed = comfy_hooks.install_release_hook(registry.release_all,
                                                             registry.release_backend)
