"""The hostlm nodes (ComfyUI V1 node classes).

Load model -> HOSTLM_MODEL; Generate and Chat take it and give the answer and the reasoning
apart. Failures are raised as HostLMError with a message naming the node and what to do,
which ComfyUI shows on the node.
"""

import hashlib
import json
import logging

from . import comfy_hooks, model_list
from .errors import HostLMError
from .hostlm_capi import GenerationSettings
from .runtime import LoadSpec, ModelHandle, registry

log = logging.getLogger("hostlm")

MODEL_TYPE = "HOSTLM_MODEL"
CATEGORY = "hostlm"
MAX_SEED = 0xFFFFFFFFFFFFFFFF  # the C API's seed is uint64, as ComfyUI's KSampler seed
ROLES = ("system", "user", "assistant", "tool")


def _sampling_inputs():
    """Widgets Generate and Chat share, in the order they are shown."""
    return {
        "thinking": ("BOOLEAN", {
            "default": False, "label_on": "on", "label_off": "off",
            "tooltip": "Let the model reason first; the reasoning goes to its own output"}),
        "max_tokens": ("INT", {
            "default": 512, "min": 1, "max": 262144,
            "tooltip": "Most tokens of the answer (reasoning included)"}),
        "temperature": ("FLOAT", {
            "default": 0.7, "min": 0.0, "max": 2.0, "step": 0.01,
            "tooltip": "0 picks the most likely token every time (seed then does not matter)"}),
        "top_p": ("FLOAT", {"default": 0.8, "min": 0.01, "max": 1.0, "step": 0.01}),
        "top_k": ("INT", {"default": 20, "min": 0, "max": 1000, "tooltip": "0: off"}),
        "seed": ("INT", {"default": 0, "min": 0, "max": MAX_SEED,
                         "control_after_generate": True}),
    }


def _optional_sampling_inputs():
    return {
        "min_p": ("FLOAT", {"default": 0.0, "min": 0.0, "max": 1.0, "step": 0.01,
                            "tooltip": "0: off"}),
        "repeat_penalty": ("FLOAT", {"default": 1.0, "min": 0.5, "max": 2.0, "step": 0.01,
                                     "tooltip": "1: off"}),
    }


def _settings(thinking, max_tokens, temperature, top_p, top_k, seed, min_p, repeat_penalty):
    return GenerationSettings(
        think=bool(thinking), max_tokens=int(max_tokens), temperature=float(temperature),
        top_p=float(top_p), top_k=int(top_k), min_p=float(min_p),
        repeat_penalty=float(repeat_penalty), seed=int(seed))


def _fingerprint(inputs):
    """IS_CHANGED value: a digest of the widget values (links arrive as None). Equal values
    give equal digests, so ComfyUI re-runs a node exactly when an input or the seed moved."""
    shown = {k: v for k, v in inputs.items() if k not in ("model", "unique_id")}
    text = json.dumps(shown, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _check_model(node, model):
    if not isinstance(model, ModelHandle):
        raise HostLMError(f"hostlm {node}: the model input must come from a hostlm Load model "
                          f"node, got {type(model).__name__}")


def _generate(node, model, messages, settings, unique_id):
    progress = comfy_hooks.Progress(settings.max_tokens, unique_id)

    def on_text(piece, is_reasoning):
        progress.text(piece, is_reasoning)
        return not comfy_hooks.interrupted()

    def on_progress(generated, total):
        progress.tokens(generated, total)
        return not comfy_hooks.interrupted()

    try:
        result = model.chat(messages, settings, on_text, on_progress)
    except HostLMError as e:
        raise HostLMError(f"hostlm {node} with {model.spec.label}: {e}", e.code) from None
    progress.flush()
    comfy_hooks.raise_if_interrupted()
    seconds = result.generate_ms / 1000.0
    rate = result.generated_tokens / seconds if seconds > 0 else 0.0
    log.info("hostlm %s: %d prompt tokens, %d generated in %.2f s (%.1f tokens/s), %s",
             node, result.prompt_tokens, result.generated_tokens, seconds, rate,
             result.done_reason)
    return result


class HostLMLoadModel:
    DESCRIPTION = ("Loads a model with hostlm (in this process, or on a running hostlm "
                   "server when server_url is set) and keeps it loaded between runs.")
    RETURN_TYPES = (MODEL_TYPE,)
    RETURN_NAMES = ("model",)
    OUTPUT_TOOLTIPS = ("The loaded model, for hostlm Generate and hostlm Chat",)
    FUNCTION = "load"
    CATEGORY = CATEGORY

    @classmethod
    def INPUT_TYPES(cls):
        return {
            "required": {
                "model": (model_list.choices(), {
                    "tooltip": "hostlm store models and the models/LLM folder"}),
                "path": ("STRING", {
                    "default": "", "multiline": False,
                    "placeholder": ".gguf file, Hugging Face folder or store name",
                    "tooltip": "When not empty, used instead of the list"}),
                "backend": (["auto", "cpu", "cuda"], {"default": "auto"}),
                "gpu_layers": ("INT", {
                    "default": -1, "min": -1, "max": 1024,
                    "tooltip": "-1: all layers on the backend; 0: CPU only"}),
                "context": ("INT", {
                    "default": 4096, "min": 256, "max": 262144, "step": 256,
                    "tooltip": "Most tokens (prompt + answer) of one generation"}),
            },
            "optional": {
                "server_url": ("STRING", {
                    "default": "", "multiline": False,
                    "placeholder": "http://127.0.0.1:11434",
                    "tooltip": "A running `hostlm serve`; empty runs the model in ComfyUI"}),
                "threads": ("INT", {"default": 0, "min": 0, "max": 1024,
                                    "tooltip": "CPU threads; 0: one per core"}),
                "cpu_moe_layers": ("INT", {
                    "default": 0, "min": -1, "max": 1024,
                    "tooltip": "Mixture-of-experts models: the experts of the first N layers "
                               "on the CPU, the rest on the GPU (llama.cpp's --n-cpu-moe); "
                               "-1: every layer's"}),
                "state_type": (["f32", "f16", "bf16"], {
                    "default": "f32",
                    "tooltip": "The linear layers' recurrent states: f32 (the model's own) or "
                               "16 bits (half their memory; faster with many sequences)"}),
            },
        }

    def load(self, model, path, backend, gpu_layers, context, server_url="", threads=0,
             cpu_moe_layers=0, state_type="f32"):
        server_url = (server_url or "").strip()
        try:
            found = model_list.resolve(model, path, for_server=bool(server_url))
            spec = LoadSpec(
                label=found.label, path="" if server_url else found.path,
                server_url=server_url, server_name=found.server_name, backend=backend,
                gpu_layers=int(gpu_layers), context=int(context), threads=int(threads),
                system=found.system, cpu_moe_layers=int(cpu_moe_layers),
                state_type=str(state_type))
            return (registry.get(spec),)
        except HostLMError as e:
            raise HostLMError(f"hostlm Load model: {e}", e.code) from None


class HostLMGenerate:
    DESCRIPTION = "Answers one prompt. The reasoning (thinking on) comes out apart from the text."
    RETURN_TYPES = ("STRING", "STRING")
    RETURN_NAMES = ("text", "reasoning")
    OUTPUT_TOOLTIPS = ("The answer", "The model's reasoning; empty with thinking off")
    FUNCTION = "generate"
    CATEGORY = CATEGORY
    OUTPUT_NODE = True  # shows the answer on the node, and a graph needs no other output

    @classmethod
    def INPUT_TYPES(cls):
        required = {
            "model": (MODEL_TYPE,),
            "prompt": ("STRING", {"default": "", "multiline": True,
                                  "placeholder": "What should the model answer?"}),
        }
        required.update(_sampling_inputs())
        optional = {"system": ("STRING", {"default": "", "multiline": True,
                                          "placeholder": "System prompt (optional)"})}
        optional.update(_optional_sampling_inputs())
        return {"required": required, "optional": optional,
                "hidden": {"unique_id": "UNIQUE_ID"}}

    @classmethod
    def IS_CHANGED(cls, **inputs):
        return _fingerprint(inputs)

    def generate(self, model, prompt, thinking, max_tokens, temperature, top_p, top_k, seed,
                 system="", min_p=0.0, repeat_penalty=1.0, unique_id=None):
        _check_model("Generate", model)
        if not (prompt or "").strip():
            raise HostLMError("hostlm Generate: the prompt is empty")
        messages = []
        system = system if (system or "").strip() else model.spec.system
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        settings = _settings(thinking, max_tokens, temperature, top_p, top_k, seed, min_p,
                             repeat_penalty)
        result = _generate("Generate", model, messages, settings, unique_id)
        return {"ui": {"text": [result.text]}, "result": (result.text, result.reasoning)}


def parse_history(text):
    """A conversation given as JSON text: a list of {"role", "content"} messages (assistant
    messages may carry "reasoning_content"). "" is an empty conversation."""
    if text is None or not str(text).strip():
        return []
    try:
        history = json.loads(text)
    except ValueError as e:
        raise HostLMError(f"history is not valid JSON: {e}") from None
    if not isinstance(history, list):
        raise HostLMError("history must be a JSON list of messages")
    for i, message in enumerate(history):
        if not isinstance(message, dict):
            raise HostLMError(f"history message {i} is not an object")
        if message.get("role") not in ROLES:
            raise HostLMError(f"history message {i}: role must be one of {', '.join(ROLES)}, "
                              f"not {message.get('role')!r}")
        if not isinstance(message.get("content", ""), str):
            raise HostLMError(f"history message {i}: content must be a string")
    return history


class HostLMChat:
    DESCRIPTION = ("A conversation: each run adds the prompt and the answer. Without a "
                   "history input the node remembers its own conversation between runs; "
                   "'new conversation' starts over.")
    RETURN_TYPES = ("STRING", "STRING", "STRING")
    RETURN_NAMES = ("text", "reasoning", "history")
    OUTPUT_TOOLTIPS = ("The answer", "The model's reasoning; empty with thinking off",
                       "The conversation so far as JSON, for another Chat node")
    FUNCTION = "chat"
    CATEGORY = CATEGORY
    OUTPUT_NODE = True

    def __init__(self):
        self.conversation = []  # ComfyUI keeps one instance per node id between runs

    @classmethod
    def INPUT_TYPES(cls):
        required = {
            "model": (MODEL_TYPE,),
            "prompt": ("STRING", {"default": "", "multiline": True}),
            "new_conversation": ("BOOLEAN", {
                "default": False, "label_on": "yes", "label_off": "no",
                "tooltip": "Forget what this node remembered and start over"}),
        }
        required.update(_sampling_inputs())
        optional = {
            "system": ("STRING", {"default": "", "multiline": True}),
            "history": ("STRING", {
                "forceInput": True,
                "tooltip": "A conversation (JSON) to continue, e.g. another Chat's history"}),
        }
        optional.update(_optional_sampling_inputs())
        return {"required": required, "optional": optional,
                "hidden": {"unique_id": "UNIQUE_ID"}}

    @classmethod
    def IS_CHANGED(cls, **inputs):
        return _fingerprint(inputs)

    def chat(self, model, prompt, new_conversation, thinking, max_tokens, temperature, top_p,
             top_k, seed, system="", history=None, min_p=0.0, repeat_penalty=1.0,
             unique_id=None):
        _check_model("Chat", model)
        if not (prompt or "").strip():
            raise HostLMError("hostlm Chat: the prompt is empty")
        try:
            if history is not None:
                base = parse_history(history)
            else:
                base = [] if new_conversation else list(self.conversation)
        except HostLMError as e:
            raise HostLMError(f"hostlm Chat: {e}") from None
        system = system if (system or "").strip() else model.spec.system
        if system:
            base = [m for m in base if m.get("role") != "system"]
            base.insert(0, {"role": "system", "content": system})
        messages = base + [{"role": "user", "content": prompt}]
        settings = _settings(thinking, max_tokens, temperature, top_p, top_k, seed, min_p,
                             repeat_penalty)
        result = _generate("Chat", model, messages, settings, unique_id)
        answer = {"role": "assistant", "content": result.text}
        if result.reasoning:
            answer["reasoning_content"] = result.reasoning
        self.conversation = messages + [answer]
        history_out = json.dumps(self.conversation, ensure_ascii=False)
        return {"ui": {"text": [result.text]},
                "result": (result.text, result.reasoning, history_out)}


NODE_CLASS_MAPPINGS = {
    "HostLMLoadModel": HostLMLoadModel,
    "HostLMGenerate": HostLMGenerate,
    "HostLMChat": HostLMChat,
}

NODE_DISPLAY_NAME_MAPPINGS = {
    "HostLMLoadModel": "hostlm Load model",
    "HostLMGenerate": "hostlm Generate",
    "HostLMChat": "hostlm Chat",
}
