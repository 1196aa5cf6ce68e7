"""How a LangChain retriever may be called: whether it takes ``k``, sync and async."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from langchain_core.retrievers import BaseRetriever

__all__ = ["takes_k"]


def _accepts_k(method: Callable[..., Any]) -> bool:
    params = inspect.signature(method).parameters
    return "k" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def takes_k(retriever: BaseRetriever) -> tuple[bool, bool]:
    """Whether ``invoke(query, k=n)`` and ``ainvoke(query, k=n)`` reach a method that takes ``k``.

    ``BaseRetriever``'s default ``_aget_relevant_documents`` takes no extra arguments, so a
    retriever that only implements the sync method is run in an executor for ``ainvoke``.
    """
    if not getattr(retriever, "_expects_other_args", False):
        return False, False
    cls = type(retriever)
    return _accepts_k(cls._get_relevant_documents), _accepts_k(cls._aget_relevant_documents)
