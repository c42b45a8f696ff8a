"""The one exception type the nodes raise: its message is what ComfyUI shows the user."""


class HostLMError(RuntimeError):
    """A readable failure (missing model, out of memory, bad input, server unreachable)."""

    def __init__(self, message, code=None):
        super().__init__(message)
        self.code = code  # the C API's error code when there is one
