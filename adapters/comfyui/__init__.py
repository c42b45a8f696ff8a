"""hostlm for ComfyUI: Qwen3.5 language models as nodes, run by hostlm in this process (the
C API through ctypes) or by a running `hostlm serve`. ComfyUI loads this folder as a package
(custom_nodes/<folder>/__init__.py) and reads the two mappings below."""

from .model_list import register_comfy_folder
from .nodes import NODE_CLASS_MAPPINGS, NODE_DISPLAY_NAME_MAPPINGS

register_comfy_folder()

__all__ = ["NODE_CLASS_MAPPINGS", "NODE_DISPLAY_NAME_MAPPINGS"]
