"""The places where the package meets ComfyUI itself, each optional.

ComfyUI imports comfy.model_management, comfy.utils and server before it loads custom nodes,
so they are taken from sys.modules, never imported here: outside ComfyUI (tests, other
hosts) they are absent, every function here does nothing, and nothing pulls in torch.
"""

import logging
import sys
import time

log = logging.getLogger("hostlm")

_HOOK_MARK = "_hostlm_release_hook"
_UNLOAD_ALL = 1e29  # unload_all_models() asks free_memory() for 1e30 bytes


def _model_management():
    return sys.modules.get("comfy.model_management")


def install_release_hook(release_all, release_backend):
    """Releases hostlm models when ComfyUI frees models: wraps model_management.free_memory,
    which unload_all_models() (the /free route, the "Unload models" button) and every model
    load under memory pressure go through. Returns False when ComfyUI is not there."""
    mm = _model_management()
    if mm is None or not hasattr(mm, "free_memory"):
        return False
    if getattr(mm.free_memory, _HOOK_MARK, False):
        return True
    original = mm.free_memory

    def free_memory(memory_required, device, *args, **kwargs):
        result = original(memory_required, device, *args, **kwargs)
        try:
            if memory_required >= _UNLOAD_ALL:
                release_all()
            elif mm.get_free_memory(device) < memory_required:
                # ComfyUI unloaded what it could and still lacks room on that device.
                release_backend("cuda" if getattr(device, "type", "") == "cuda" else "cpu")
        except Exception as e:  # a failed release must not break ComfyUI's own unloading
            log.warning("hostlm: releasing models failed: %s", e)
        return result

    setattr(free_memory, _HOOK_MARK, True)
    mm.free_memory = free_memory  # module global: unload_all_models() calls this one now
    return True


def interrupted():
    """True once the user pressed Cancel in ComfyUI."""
    mm = _model_management()
    return bool(mm is not None and mm.processing_interrupted())


def raise_if_interrupted():
    """Raises ComfyUI's own interrupt exception, so the run ends as 'interrupted'."""
    mm = _model_management()
    if mm is not None:
        mm.throw_exception_if_processing_interrupted()


class Progress:
    """ComfyUI's progress bar and the node's live text, when ComfyUI is there."""

    TEXT_INTERVAL_S = 0.25  # throttles websocket text updates

    def __init__(self, total, node_id=None):
        self._bar = None
        self._server = None
        self._node_id = node_id
        self._last_sent = 0.0
        self._reasoning, self._text = [], []
        utils = sys.modules.get("comfy.utils")
        if utils is not None and hasattr(utils, "ProgressBar"):
            self._bar = utils.ProgressBar(max(1, total))
        server = sys.modules.get("server")
        prompt_server = getattr(getattr(server, "PromptServer", None), "instance", None)
        if node_id is not None and hasattr(prompt_server, "send_progress_text"):
            self._server = prompt_server

    def tokens(self, generated, total):
        if self._bar is not None:
            self._bar.update_absolute(generated, max(1, total))

    def text(self, piece, is_reasoning):
        (self._reasoning if is_reasoning else self._text).append(piece)
        now = time.monotonic()
        if now - self._last_sent >= self.TEXT_INTERVAL_S:
            self.flush()
            self._last_sent = now

    def flush(self):
        if self._server is None:
            return
        shown = "".join(self._text)
        if not shown and self._reasoning:
            shown = "(thinking) " + "".join(self._reasoning)
        try:
            self._server.send_progress_text(shown, self._node_id)
        except Exception as e:
            log.debug("hostlm: progress text not sent: %s", e)
