"""Passage metadata as strict JSON: what a retriever's ``Document`` may carry, made plain data.

A LangChain retriever may put anything in a ``Document``'s metadata: a ``NaN`` or infinite score
(Python's ``json`` reads ``NaN`` and ``Infinity`` from a server's reply), a ``datetime``, ``bytes``,
a ``set``, a numpy scalar or array, a ``Decimal``, an object of its own, keys that are not text,
nesting without end. Each of them breaks something far from where it came in: LangGraph's
checkpointer (msgpack), the JSON of a stored run (``allow_nan=False``), a web page's summary.
:func:`json_safe` maps such a value to strict JSON data once, where passages enter the package
(:func:`searchain_graph.method.calls.doc_dict`, which every method's retrieval goes through).

What becomes what:

* ``NaN``, ``Infinity``, ``-Infinity`` (a ``float``, a numpy float or a ``Decimal``): ``None``;
* ``datetime``, ``date``, ``time``: their ISO 8601 text (``isoformat()``);
* ``bytes``, ``bytearray``, ``memoryview``: text, decoded as UTF-8 with U+FFFD for each byte
  that is not UTF-8 (metadata bytes are most often text; base64 would make those unreadable);
* ``set``, ``frozenset``: a list, sorted when its items can be sorted (else in iteration order);
* ``tuple`` (and other lists): a list;
* numpy scalars and arrays (anything with a ``tolist()`` or ``item()`` method): their Python
  values (numpy is not imported);
* ``Decimal``: a ``float``;
* an integer outside msgpack's 64-bit range: its decimal text;
* a mapping's keys that are not text: their JSON text (``1`` → ``"1"``, ``None`` → ``"null"``);
* text with lone surrogates (U+D800..U+DFFF): each replaced by U+FFFD;
* containers nested deeper than :data:`MAX_DEPTH`: the text :data:`DEEPER` (a cycle ends there too);
* anything else: ``str(value)``.

Strict JSON data (``None``, ``bool``, ``int``, finite ``float``, ``str``, and lists and ``str``-keyed
dicts of them, not nested deeper than :data:`MAX_DEPTH`) comes back equal.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections import deque
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any

from searchain_graph._text import replace_surrogates

__all__ = ["DEEPER", "MAX_DEPTH", "MAX_NOTES", "json_safe"]

MAX_DEPTH = 32
"""Containers kept below the value's top (msgpack refuses some 250 levels, ``json`` about 1,000)."""
DEEPER = f"<nested deeper than {MAX_DEPTH} levels: dropped>"
"""What a container deeper than :data:`MAX_DEPTH` becomes."""
MAX_NOTES = 10
"""At most this many conversions are noted (the first ones met)."""

PATH_CHARS = 60
"""A note's path is cut to about this many characters (deep nesting would make it long)."""

_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what msgpack encodes


def json_safe(value: Any, notes: list[str] | None = None, *, path: str = "") -> Any:
    """``value`` as strict JSON data (see the module's list of what becomes what).

    Never raises, whatever ``value`` is; it walks no deeper than :data:`MAX_DEPTH` levels of nesting.
    ``json.dumps(json_safe(v), allow_nan=False)`` succeeds, and LangGraph's msgpack serializer
    takes the result.

    Args:
        value: Any value (a ``Document``'s metadata, most often).
        notes: A list to which each conversion is added, once, as ``"path (what → what)"``
            (``score (NaN → null)``), :data:`MAX_NOTES` at most; None notes nothing. A tuple
            made a list is not noted (msgpack and JSON make it one anyway).
        path: How the notes name ``value`` itself (its keys follow it: ``path.key``, ``path[]``).
    """
    return _safe(value, 0, path, notes, True)


def _note(notes: list[str] | None, path: str, what: str) -> None:
    if notes is not None and len(notes) < MAX_NOTES:
        note = f"{path or 'the value'} ({what})"
        if note not in notes:
            notes.append(note)


def _text(value: str, path: str, notes: list[str] | None) -> str:
    text, replaced = replace_surrogates(value if type(value) is str else str.__str__(value))
    if replaced:
        _note(notes, path, "lone surrogates → U+FFFD")
    return text


def _number(value: float, path: str, notes: list[str] | None, kind: str) -> float | None:
    if math.isfinite(value):
        return value
    shown = "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    _note(notes, path, f"{shown} → null" if kind == "float" else f"{kind} {shown} → null")
    return None


def _safe(value: Any, depth: int, path: str, notes: list[str] | None, methods: bool) -> Any:
    try:
        if value is None or value is True or value is False:
            return value
        if isinstance(value, str):
            return _text(value, path, notes)
        if isinstance(value, int) and not isinstance(value, bool):
            number = int(value)
            if _INT_MIN <= number <= _INT_MAX:
                return number
            _note(notes, path, "integer beyond 64 bits → text")
            return str(number)
        if isinstance(value, float):
            kind = "float" if type(value) is float else type(value).__name__
            if kind != "float" and math.isfinite(value):
                _note(notes, path, f"{kind} → number")
            return _number(float(value), path, notes, kind)
        if isinstance(value, Decimal):
            if not value.is_finite():  # NaN, sNaN, Infinity: float() refuses a signalling NaN
                _note(notes, path, f"Decimal {value} → null")
                return None
            _note(notes, path, "Decimal → number")
            return _number(float(value), path, notes, "Decimal")  # beyond a float's range: null
        if isinstance(value, (dt.date, dt.time)):  # a datetime is a date
            _note(notes, path, f"{type(value).__name__} → ISO text")
            return value.isoformat()
        if isinstance(value, (bytes, bytearray, memoryview)):
            _note(notes, path, f"{type(value).__name__} → text")
            return bytes(value).decode("utf-8", "replace")
        if isinstance(value, (Mapping, list, tuple, set, frozenset, deque)):
            if depth >= MAX_DEPTH:
                _note(notes, path, f"nested deeper than {MAX_DEPTH} levels → dropped")
                return DEEPER
            if isinstance(value, Mapping):
                return _mapping(value, depth, path, notes)
            if isinstance(value, (set, frozenset)):
                _note(notes, path, f"{type(value).__name__} → list")
                try:
                    items: Iterable[Any] = sorted(value)
                except Exception:  # items that do not compare (or compare too deep)
                    items = list(value)
            else:
                items = value
            inner = _child(path, "[]")
            return [_safe(item, depth + 1, inner, notes, True) for item in items]
        if methods:
            for name in ("tolist", "item"):  # numpy arrays and scalars (and torch tensors)
                method = getattr(value, name, None)
                if callable(method):
                    plain = method()
                    _note(notes, path, f"{type(value).__name__} → {_kind(plain)}")
                    return _safe(plain, depth, path, notes, False)
    except Exception:  # a value that breaks on the way (its __float__, its items(), ...) is text
        pass
    _note(notes, path, f"{type(value).__name__} → text")
    try:
        shown = str(value)
    except Exception:
        shown = f"<{type(value).__name__}>"
    return _text(shown, path, notes)


def _mapping(value: Mapping[Any, Any], depth: int, path: str, notes: list[str] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(key, str):
            name = _text(key, path, notes)
        else:
            plain = _safe(key, depth + 1, _child(path, ".<key>"), notes, True)
            name = plain if isinstance(plain, str) else json.dumps(plain, ensure_ascii=False)
            _note(notes, _child(path, f".{name}"), f"{type(key).__name__} key → text")
        out[name] = _safe(item, depth + 1, _child(path, f".{name}"), notes, True)
    return out


def _child(path: str, step: str) -> str:
    """The path of an item of ``path``'s value, for the notes: ``a.b``, ``a[]`` (not ``a[][]``), kept short."""
    if not path:
        step = step.removeprefix(".")
        return step if len(step) <= PATH_CHARS else f"{step[:PATH_CHARS]}…"
    if path.endswith("…") or (step == "[]" and path.endswith("[]")):
        return path
    return path + step if len(path) + len(step) <= PATH_CHARS else f"{path}…"


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "list"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__
