"""A retriever's or reader's identity: what names it in cache keys, across processes."""

from __future__ import annotations

from typing import Any

__all__ = ["component_key"]


def component_key(component: Any) -> str:
    """A retriever's or reader's identity in cache keys: its ``cache_key``, else its ``calibration_key``.

    Returns an empty string when it has neither (the caller then gives it a key of its own).
    """
    for name in ("cache_key", "calibration_key"):
        try:
            key = getattr(component, name, None)
        except Exception:  # a property that cannot say (missing files): no stable key
            key = None
        if isinstance(key, str) and key:
            return f"{type(component).__qualname__}:{key}"
    return ""
