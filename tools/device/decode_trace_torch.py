#!/usr/bin/env python3
"""A kernel trace of hostlm's decode steps where Nsight Systems is not installed: the model is
loaded through the C API (adapters/comfyui/hostlm_capi.py) in a process that runs PyTorch's
profiler, whose CUPTI tracing records every kernel of the process, graph-launched ones too.

    HOSTLM_LIBRARY=build/lib/libhostlm.so tools/device/decode_trace_torch.py MODEL.gguf OUT.json
    tools/device/decode_timeline.py OUT.json

Writes the kernels as a Chrome trace (PyTorch's export); decode_timeline.py reads it.
"""
import pathlib
import sys
import types

import torch

# The C API wrapper lives in the ComfyUI package; import it as a module of that package
# without running the package's __init__ (which registers ComfyUI nodes).
ROOT = pathlib.Path(__file__).resolve().parents[2]
_package = types.ModuleType("hostlm_comfyui")
_package.__path__ = [str(ROOT / "adapters" / "comfyui")]
sys.modules["hostlm_comfyui"] = _package
from hostlm_comfyui import hostlm_capi  # noqa: E402


def main() -> None:
    model_path, out = sys.argv[1], sys.argv[2]
    tokens = int(sys.argv[3]) if len(sys.argv) > 3 else 48
    torch.cuda.init()
    model = hostlm_capi.CModel(model_path, backend="cuda", context=4096, max_sequences=1)
    settings = hostlm_capi.GenerationSettings(max_tokens=16, temperature=0.0, top_k=1)
    messages = [{"role": "user", "content": "hello"}]
    model.chat(messages, settings)  # warm: graphs recorded, kernels loaded
    settings.max_tokens = tokens
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        result = model.chat(messages, settings)
    print(f"generated {result.generated_tokens} tokens", file=sys.stderr)
    prof.export_chrome_trace(out)
    model.close()


if __name__ == "__main__":
    main()
