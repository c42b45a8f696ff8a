"""ctypes binding of hostlm.h: load a model in this process and chat with it.

Only the calls the nodes need are bound. Every C call releases the GIL (ctypes does that for
CDLL functions), so ComfyUI's server thread keeps answering while a model loads or generates;
the callbacks take the GIL back for the moment they run.
"""

import ctypes
import ctypes.util
import glob
import json
import os
import sys
import threading
from dataclasses import dataclass

from .errors import HostLMError

C_API_VERSION = 5  # HOSTLM_C_API_VERSION this binding was written for

HOSTLM_TEXT_REASONING = 1
_DONE_REASONS = {0: "stop", 1: "length", 2: "cancelled"}


class _ModelParams(ctypes.Structure):
    _fields_ = [
        ("backend", ctypes.c_char_p),
        ("threads", ctypes.c_int32),
        ("context", ctypes.c_int64),
        ("max_sequences", ctypes.c_int32),
        ("kv_type", ctypes.c_char_p),
        ("prefix_cache", ctypes.c_int32),
        ("kv_cache_mib", ctypes.c_int64),
        ("gpu_layers", ctypes.c_int32),
        ("cpu_moe_layers", ctypes.c_int32),
        ("state_type", ctypes.c_char_p),
    ]


class _GenerateParams(ctypes.Structure):
    _fields_ = [
        ("messages_json", ctypes.c_char_p),
        ("prompt", ctypes.c_char_p),
        ("tools_json", ctypes.c_char_p),
        ("think", ctypes.c_int32),
        ("temperature", ctypes.c_float),
        ("top_k", ctypes.c_int32),
        ("top_p", ctypes.c_float),
        ("min_p", ctypes.c_float),
        ("repeat_penalty", ctypes.c_float),
        ("repeat_last_n", ctypes.c_int32),
        ("seed", ctypes.c_uint64),
        ("max_tokens", ctypes.c_int32),
    ]


class _Stats(ctypes.Structure):
    _fields_ = [
        ("prompt_tokens", ctypes.c_int32),
        ("generated_tokens", ctypes.c_int32),
        ("done_reason", ctypes.c_int32),
        ("prompt_ms", ctypes.c_double),
        ("generate_ms", ctypes.c_double),
    ]


_ON_TEXT = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_char_p, ctypes.c_int32, ctypes.c_void_p)
_ON_PROGRESS = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32, ctypes.c_int32, ctypes.c_void_p)


@dataclass
class GenerationSettings:
    """What one generation asks for; the same fields go to the C API and to a server."""

    think: bool = False
    max_tokens: int = 512
    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20
    min_p: float = 0.0
    repeat_penalty: float = 1.0
    seed: int = 0


@dataclass
class ChatResult:
    text: str
    reasoning: str
    prompt_tokens: int
    generated_tokens: int
    done_reason: str  # "stop", "length" or "cancelled"
    prompt_ms: float
    generate_ms: float


def _repo_root():
    # The package folder is <repo>/adapters/comfyui; a symlink in custom_nodes/ resolves to it.
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def library_candidates():
    """Where libhostlm.so is looked for, in order: HOSTLM_LIBRARY, installed, build trees."""
    env = os.environ.get("HOSTLM_LIBRARY")
    if env:
        return [env]  # an explicit choice is never silently replaced by another library
    out = []
    found = ctypes.util.find_library("hostlm")
    if found:
        out.append(found)
    prefixes = [sys.prefix, "/usr/local", "/usr"]
    for prefix in prefixes:
        for libdir in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
            out.append(os.path.join(prefix, libdir, "libhostlm.so"))
    root = _repo_root()
    out.append(os.path.join(root, "build", "lib", "libhostlm.so"))
    builds = glob.glob(os.path.join(root, "build*", "lib", "libhostlm.so"))
    out.extend(sorted(builds, key=os.path.getmtime, reverse=True))  # newest build first
    return out


_library = None
_library_lock = threading.Lock()


def _bind(lib):
    lib.hostlm_c_api_version.restype = ctypes.c_int32
    lib.hostlm_last_error.restype = ctypes.c_char_p
    lib.hostlm_model_default_params.restype = _ModelParams
    lib.hostlm_model_load.restype = ctypes.c_void_p
    lib.hostlm_model_load.argtypes = [ctypes.c_char_p, _ModelParams]
    lib.hostlm_model_free.restype = None
    lib.hostlm_model_free.argtypes = [ctypes.c_void_p]
    lib.hostlm_generate_default_params.restype = _GenerateParams
    lib.hostlm_chat.restype = ctypes.c_int32
    lib.hostlm_chat.argtypes = [
        ctypes.c_void_p, ctypes.POINTER(_GenerateParams), _ON_TEXT, ctypes.c_void_p,
        ctypes.POINTER(_Stats)]
    # Added later within the same API version: a library without them still works.
    if hasattr(lib, "hostlm_chat_with_progress"):
        lib.hostlm_chat_with_progress.restype = ctypes.c_int32
        lib.hostlm_chat_with_progress.argtypes = [
            ctypes.c_void_p, ctypes.POINTER(_GenerateParams), _ON_TEXT, _ON_PROGRESS,
            ctypes.c_void_p, ctypes.POINTER(_Stats)]
    if hasattr(lib, "hostlm_model_backend"):
        lib.hostlm_model_backend.restype = ctypes.c_char_p
        lib.hostlm_model_backend.argtypes = [ctypes.c_void_p]
    for name in ("hostlm_model_n_layers", "hostlm_model_n_ctx_train", "hostlm_model_context"):
        if hasattr(lib, name):
            getattr(lib, name).restype = ctypes.c_int64
            getattr(lib, name).argtypes = [ctypes.c_void_p]


def load_library():
    """The hostlm library, opened once; HostLMError listing every place tried when absent."""
    global _library
    with _library_lock:
        if _library is not None:
            return _library
        tried = []
        for path in library_candidates():
            if not (os.path.isfile(path) or os.sep not in path):
                tried.append(path + " (not there)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({e})")
                continue
            _bind(lib)
            version = lib.hostlm_c_api_version()
            if version != C_API_VERSION:
                raise HostLMError(
                    f"{path} has hostlm C API version {version}; this package needs "
                    f"{C_API_VERSION}: update the package or point HOSTLM_LIBRARY at a "
                    "matching libhostlm.so")
            lib.path = path
            _library = lib
            return lib
        raise HostLMError(
            "libhostlm.so was not found. Set HOSTLM_LIBRARY to its path, install hostlm, or "
            "build it in the repository this package belongs to; or give the Load model "
            "node a server URL. Tried: " + "; ".join(tried))


def _last_error(lib):
    message = lib.hostlm_last_error()
    return message.decode("utf-8", "replace") if message else ""


def _message_with_hint(message):
    if "out of memory" in message:
        return message + " (try a smaller context, fewer GPU layers or another backend)"
    return message


class CModel:
    """One loaded model of the C API. close() frees it; calls after close() fail cleanly."""

    def __init__(self, path, backend="auto", threads=0, context=4096, max_sequences=None,
                 gpu_layers=-1, cpu_moe_layers=0, state_type="f32"):
        self._lib = load_library()
        params = self._lib.hostlm_model_default_params()
        params.state_type = state_type.encode()
        params.backend = backend.encode()
        params.threads = threads
        params.gpu_layers = gpu_layers
        params.cpu_moe_layers = cpu_moe_layers
        params.context = context
        if max_sequences is not None:
            params.max_sequences = max_sequences
        handle = self._lib.hostlm_model_load(os.fsencode(path), params)
        if not handle:
            raise HostLMError(
                f"cannot load model '{path}': {_message_with_hint(_last_error(self._lib))}")
        self._handle = handle
        self._lock = threading.Lock()  # close() must not race a chat on another thread

    @property
    def loaded(self):
        return self._handle is not None

    def _getter(self, name, default):
        fn = getattr(self._lib, name, None)
        if fn is None or self._handle is None:
            return default
        return fn(self._handle)

    @property
    def backend(self):
        value = self._getter("hostlm_model_backend", None)
        return value.decode() if value else "unknown"

    @property
    def n_layers(self):
        return self._getter("hostlm_model_n_layers", 0)

    @property
    def n_ctx_train(self):
        return self._getter("hostlm_model_n_ctx_train", 0)

    def close(self):
        with self._lock:
            if self._handle is not None:
                self._lib.hostlm_model_free(self._handle)
                self._handle = None

    def chat(self, messages, settings, on_text=None, on_progress=None):
        """Generates the answer to `messages` (OpenAI-style list). on_text(text, is_reasoning)
        and on_progress(generated, max_tokens) return False to stop. Exceptions they raise
        stop the generation and are raised again here."""
        params = self._lib.hostlm_generate_default_params()
        messages_json = json.dumps(messages, ensure_ascii=False).encode("utf-8")
        params.messages_json = messages_json
        params.think = 1 if settings.think else 0
        params.temperature = settings.temperature
        params.top_k = settings.top_k
        params.top_p = settings.top_p
        params.min_p = settings.min_p
        params.repeat_penalty = settings.repeat_penalty
        params.seed = settings.seed & 0xFFFFFFFFFFFFFFFF
        params.max_tokens = settings.max_tokens
        text, reasoning, failure = [], [], []

        def text_cb(piece, kind, _user):
            try:
                s = piece.decode("utf-8", "replace")
                (reasoning if kind == HOSTLM_TEXT_REASONING else text).append(s)
                if on_text is not None and on_text(s, kind == HOSTLM_TEXT_REASONING) is False:
                    return 0
                return 1
            except BaseException as e:  # never let an exception unwind through C
                failure.append(e)
                return 0

        def progress_cb(generated, max_tokens, _user):
            try:
                if on_progress is not None and on_progress(generated, max_tokens) is False:
                    return 0
                return 1
            except BaseException as e:
                failure.append(e)
                return 0

        stats = _Stats()
        text_fn = _ON_TEXT(text_cb)
        with self._lock:
            if self._handle is None:
                raise HostLMError("the model was released; load it again")
            if hasattr(self._lib, "hostlm_chat_with_progress"):
                progress_fn = _ON_PROGRESS(progress_cb)
                rc = self._lib.hostlm_chat_with_progress(
                    self._handle, ctypes.byref(params), text_fn, progress_fn, None,
                    ctypes.byref(stats))
            else:
                rc = self._lib.hostlm_chat(
                    self._handle, ctypes.byref(params), text_fn, None, ctypes.byref(stats))
        if failure:
            raise failure[0]
        if rc != 0:
            raise HostLMError(_message_with_hint(_last_error(self._lib)), code=rc)
        return ChatResult(
            text="".join(text), reasoning="".join(reasoning),
            prompt_tokens=stats.prompt_tokens, generated_tokens=stats.generated_tokens,
            done_reason=_DONE_REASONS.get(stats.done_reason, "stop"),
            prompt_ms=stats.prompt_ms, generate_ms=stats.generate_ms)
