"""``--model import:package.module:name``: a chat model of your own, by its import path."""

from __future__ import annotations

import importlib

from langchain_core.language_models import BaseChatModel

from searchain_graph.llms.hub import ModelNotFoundError


def imported_chat_model(target: str) -> BaseChatModel:
    """The chat model at ``module:name``: the object itself, or what calling it returns."""
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ValueError(f"import: wants <module>:<name>, got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise ModelNotFoundError(f"cannot import {module_name!r} for --model import:{target}: {exc}") from exc
    try:
        obj = getattr(module, attr)
    except AttributeError as exc:
        raise ModelNotFoundError(f"{module_name!r} has no {attr!r} (--model import:{target})") from exc
    model = obj if isinstance(obj, BaseChatModel) else obj() if callable(obj) else obj
    if not isinstance(model, BaseChatModel):
        raise ValueError(f"import:{target} is a {type(model).__name__}, not a LangChain chat model")
    return model
