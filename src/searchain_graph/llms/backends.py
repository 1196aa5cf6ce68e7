"""The names of the local backends, apart from the backends themselves (the CLI lists them without loading any)."""

from __future__ import annotations

from typing import Literal, get_args

Backend = Literal["llama.cpp", "torch", "onnx-int4", "onnx-int8", "onnx-fp32"]
"""How a local model runs: ``llama.cpp`` (a GGUF file as it is, :mod:`~searchain_graph.llms.llamacpp`),
``torch`` (fp32 in transformers, the reference) or ONNX Runtime GenAI
(:mod:`~searchain_graph.llms.onnx_genai`)."""
BACKENDS: tuple[str, ...] = get_args(Backend)
GGUF_BACKEND: Backend = "llama.cpp"
"""The backend of GGUF files: the packaged models, SmolLM2 and a ``--model PATH.gguf``."""
