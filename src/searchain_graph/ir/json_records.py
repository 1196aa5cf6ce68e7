r"""JSON records from corpus and dataset files: JSONL or one JSON array, decoded strictly and repaired.

The reader under :mod:`~searchain_graph.ir.corpus` and
:mod:`~searchain_graph.evaluation.dataset_loading`. What Python's ``json`` would let through, or
fail on without saying where, ends here as the caller's format error naming the file, the line
and the field (``supporting_facts[0][1]``):

* a number JSON does not have: ``NaN``, ``Infinity``, ``-Infinity`` (Python's ``json`` accepts
  them), and a float too large for a float (``1e400``, which would become ``inf``);
* an integer of more digits than Python converts (4,300 by default): ``json`` raises a bare
  ``ValueError``. Such an integer cannot be a count, an index or a sensible id; a field that needs a
  long id takes it as a string, which is kept whatever its length;
* nesting deeper than ``json`` recurses (about a thousand levels less the caller's stack): ``json``
  raises ``RecursionError``. Catching it costs nothing on a normal line; the readers above never
  walk a value recursively, and keep no value of unchecked depth.

Lone surrogates (U+D800..U+DFFF: a ``"\ud800"`` escape without its pair) are the one fault that is
repaired rather than refused: a string holding one cannot be encoded to UTF-8, so an index writer, a
tokenizer or a JSON writer would fail on it far from the file. They are replaced by U+FFFD
(:func:`searchain_graph._text.replace_surrogates`) in every string and key of the record, and the
first line that had one is reported with a :class:`UserWarning`, once per file. Only a line holding
a ``\ud800``-``\udfff`` escape is looked at (one regex search, about a nanosecond a byte where the
JSON parser takes five), as the bytes themselves are checked to be UTF-8, which cannot encode a
surrogate.
"""

from __future__ import annotations

import json
import math
import re
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from searchain_graph._text import replace_surrogates

__all__ = ["MAX_LINE_BYTES", "decode_record", "iter_json_records", "repair_surrogates", "utf8_text"]

MAX_LINE_BYTES = 8 * 1024 * 1024
"""A corpus or dataset line longer than this (8 MiB) is refused with its line number before it is
parsed, rather than read whole into memory: no passage or question record comes near it."""


class _NotANumber(ValueError):
    """A ``NaN``/``Infinity`` literal, or a float that overflows to infinity."""


def _constant(name: str) -> float:
    raise _NotANumber(name)


def _finite_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _NotANumber(text)
    return value


_DECODER = json.JSONDecoder(parse_constant=_constant, parse_float=_finite_float)
"""``json.loads`` but for numbers that are not finite; as fast (C scanner, one decoder for all lines)."""

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}:,]|[^\s\[\]{}:,"]+', re.DOTALL)
_INTEGER = re.compile(r"-?\d+")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _digit_limit() -> int:
    get = getattr(sys, "get_int_max_str_digits", None)
    return int(get()) if get else 4300


def _field(path: list[str | int], skip: int) -> str:
    """``path`` as ``key[0].key``, its first ``skip`` items left out (the array that a file is)."""
    rendered = ""
    for item in path[skip:]:
        rendered += f"[{item}]" if isinstance(item, int) else (f".{item}" if rendered else item)
    return rendered


def _key(token: str) -> str:
    try:
        key = json.loads(token)
    except ValueError:
        key = token.strip('"')
    key = replace_surrogates(str(key))[0]
    return key if len(key) <= 60 else key[:57] + "..."


def _scan(text: str, skip: int, number: bool) -> tuple[int, int, str, str]:
    """Find what the decoder refused: ``(position, depth, field, token)``.

    ``number``: the first number token that is not finite or has too many digits; otherwise the
    deepest point of the nesting. Only run on a line that failed, so a plain regex tokenizer will do.
    """
    limit = _digit_limit()
    stack: list[str | int] = []  # the key or index of each open container
    kinds: list[str] = []
    last = ""
    deepest = (0, 0, "")
    for match in _TOKEN.finditer(text):
        token = match.group()
        head = token[0]
        if head in "[{":
            if head == "[":
                stack.append(0)
            else:
                stack.append("")
            kinds.append(head)
            if len(kinds) > deepest[1]:  # the field named is the record's own, not its 5,000th level
                top = stack[skip] if len(stack) > skip + 1 else None
                deepest = (match.start(), len(kinds), top if isinstance(top, str) else "")
        elif head in "]}":
            if kinds:
                kinds.pop()
                stack.pop()
        elif head == ",":
            if kinds and kinds[-1] == "[":
                stack[-1] = int(stack[-1]) + 1
        elif head == ":":
            if kinds and kinds[-1] == "{":
                stack[-1] = _key(last)
        elif head == '"':
            last = token
        elif number and (
            token in ("NaN", "Infinity", "-Infinity")
            or (_INTEGER.fullmatch(token) and len(token.lstrip("-")) > limit)
            or (not _INTEGER.fullmatch(token) and _overflows(token))
        ):
            return match.start(), len(kinds), _field(stack, skip), token
    return deepest[0], deepest[1], deepest[2], ""


def _overflows(token: str) -> bool:
    try:
        return math.isinf(float(token))
    except ValueError:
        return False


def _refusal(text: str, exc: BaseException, skip: int) -> tuple[int, str]:
    """``(position, reason)`` for a decoder error that is not a syntax error."""
    if isinstance(exc, RecursionError):
        position, depth, field, _ = _scan(text, skip, number=False)
        where = f"field {field!r} is " if field else ""
        return position, f"{where}nested {depth} levels deep (too deep for the JSON parser)"
    position, _, field, token = _scan(text, skip, number=True)
    where = f"field {field!r}" if field else "the value"
    if isinstance(exc, _NotANumber) or (token and not _INTEGER.fullmatch(token)):
        shown = token if len(token) <= 40 else token[:37] + "..."
        return position, f"{where} holds {shown}, which is not a finite number"
    if token:
        digits = len(token.lstrip("-"))
        return (
            position,
            f"{where} holds an integer of {digits} digits (at most {_digit_limit()}; give a long id as a string)",
        )
    return position, str(exc)[:200]


def decode_record(text: str, where: str, error: type[ValueError], *, skip: int = 0) -> Any:
    """One JSON value from ``text``, or ``error`` naming ``where``, the column and the field.

    Args:
        text: A JSONL line (or a whole JSON array file).
        where: ``path:line`` (for a whole file: ``path``, the line is found from the position).
        error: The caller's format error.
        skip: Components of a field's path to leave out (1 for a file that is one array).

    Raises:
        error: invalid JSON, a number that is not finite or has too many digits, or nesting
            deeper than ``json`` recurses.
    """
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        place = f"{where}:{exc.lineno}" if skip else where
        raise error(f"{place}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
    except (ValueError, RecursionError) as exc:
        position, reason = _refusal(text, exc, skip)
        line = text.count("\n", 0, position) + 1
        column = position - text.rfind("\n", 0, position)
        place = f"{where}:{line}" if skip else where
        raise error(f"{place}: not valid JSON: {reason} (column {column})") from exc


def repair_surrogates(value: Any) -> tuple[Any, int]:
    """``value`` (decoded JSON) with lone surrogates in its strings and keys replaced by U+FFFD, and how many.

    Lists and objects are repaired in place, walked without recursion (a value may be nested
    hundreds of levels deep).
    """
    if isinstance(value, str):
        return replace_surrogates(value)
    total = 0
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if not all(key.isascii() for key in node):
                renamed = [(replace_surrogates(key), item) for key, item in node.items()]
                total += sum(count for (_, count), _ in renamed)
                node.clear()
                node.update((key, item) for (key, _), item in renamed)
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            continue
        for key, item in list(items):
            if isinstance(item, str):
                text, count = replace_surrogates(item)
                if count:
                    node[key] = text
                    total += count
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value, total


def _has_surrogate_escape(raw: str) -> bool:
    r"""Whether ``raw`` (JSON text) holds a ``\ud800``-``\udfff`` escape (``\ud000``-``\ud7ff`` are Hangul)."""
    return _SURROGATE_ESCAPE.search(raw) is not None


class _Surrogates:
    """Repairs a file's records, warning at the first that had a lone surrogate."""

    def __init__(self, path: Path, *, warn: bool) -> None:
        self.path = path
        self.warned = not warn

    def repair(self, record: Any, where: str) -> Any:
        record, count = repair_surrogates(record)
        if count and not self.warned:
            self.warned = True
            warnings.warn(
                f"{where}: {count} lone surrogate(s) (a \\ud800-\\udfff escape without its pair) replaced by"
                f" U+FFFD; later ones in {self.path} are replaced without a warning",
                UserWarning,
                stacklevel=2,
            )
        return record


def iter_json_records(path: Path, *, error: type[ValueError], warn: bool = True) -> Iterator[tuple[Any, str, int]]:
    """Yield ``(record, where, number)`` from a JSONL file or a JSON array file.

    A file is read as one JSON array when its content starts with ``[`` and parses as a
    whole (never for a ``.jsonl`` suffix; always for ``.json``); otherwise as JSONL, blank
    lines skipped. ``where`` is ``path:line`` (JSONL) or ``path: record N`` (array); ``number``
    is the line number or the position from 1. Records are decoded by :func:`decode_record` and
    repaired by :func:`repair_surrogates` (see the module docstring); ``warn=False`` repairs
    without the warning (for a first look at a file that is read again).

    Raises:
        error: not UTF-8, invalid JSON, a number that is not finite or has too many digits, or
            nesting too deep, naming the line (and the field).
    """
    surrogates = _Surrogates(path, warn=warn)
    with path.open("rb") as handle:
        head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        handle.seek(0)
        if path.suffix.lower() == ".json" and not head.startswith("["):
            raise error(f"{path}: a JSON file must hold an array of records")
        if head.startswith("[") and path.suffix.lower() != ".jsonl":
            text = utf8_text(handle.read(), f"{path}", error, bom=True)
            try:
                records = decode_record(text, f"{path}", error, skip=1)
            except error as exc:
                if not isinstance(exc.__cause__, json.JSONDecodeError) or exc.__cause__.msg != "Extra data":
                    raise  # "Extra data": more values follow, so it is JSONL
                handle.seek(0)
            else:
                escapes = _has_surrogate_escape(text)
                del text  # the file's text, not kept while its records are read
                for n, record in enumerate(records, start=1):
                    where = f"{path}: record {n}"
                    yield surrogates.repair(record, where) if escapes else record, where, n
                return
        lineno = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            lineno += 1
            where = f"{path}:{lineno}"
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise error(f"{where}: line longer than {MAX_LINE_BYTES} bytes; is this a corpus file?")
            line = utf8_text(raw, where, error, bom=lineno == 1)
            if not line or line.isspace():
                continue
            record = decode_record(line, where, error)
            yield surrogates.repair(record, where) if _has_surrogate_escape(line) else record, where, lineno


def utf8_text(data: bytes, where: str, error: type[ValueError], *, bom: bool = False) -> str:
    """``data`` as text, or ``error`` naming where the bytes are not UTF-8."""
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})") from exc
