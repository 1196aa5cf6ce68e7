r"""What the package's HTTP apps share: bounded JSON bodies, read on a deadline, and error replies.

A body is refused with a 4xx naming the problem, never answered with a 500: over
:data:`MAX_BODY_BYTES` (413); not complete within :data:`BODY_TIMEOUT_S` seconds, as when a
``Content-Length`` promises more bytes than come (408, and the connection is closed); not UTF-8,
not JSON, ``NaN`` or ``Infinity`` (not JSON either), a number a float cannot hold (``1e400``) or
an integer of more than :data:`MAX_INT_DIGITS` digits, arrays or objects nested deeper than
:data:`MAX_JSON_DEPTH`, or a string holding a lone surrogate (``"\\ud800"``: JSON's escape can
write one, but it is not text and cannot be written back as UTF-8) (400).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Mapping
from itertools import accumulate
from typing import Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

__all__ = [
    "BODY_TIMEOUT_S",
    "MAX_BODY_BYTES",
    "MAX_INT_DIGITS",
    "MAX_JSON_DEPTH",
    "BadRequest",
    "JSONReply",
    "error",
    "json_depth",
    "lone_surrogate",
    "parse_json",
    "read_json",
    "shown",
]

MAX_BODY_BYTES = 64 * 1024
"""The largest request body read (a question or a query is a few hundred bytes)."""
BODY_TIMEOUT_S = 10.0
"""The whole body must arrive within this many seconds of the handler starting to read it."""
MAX_JSON_DEPTH = 32
"""Arrays and objects nested deeper than this are refused before they are parsed."""
MAX_INT_DIGITS = 30
"""Integers with more digits are refused (Python refuses to parse more than 4,300 anyway)."""

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_OTHER_THAN_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEPS = bytes.maketrans(b"[]{}", b"\x02\x00\x02\x00")


class BadRequest(Exception):
    """A request to refuse: ``status``, a message naming the problem, and headers for the reply."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = dict(headers or {})


class JSONReply(JSONResponse):
    r"""A JSON response that a lone surrogate in a string cannot turn into a 500: it is sent as ``\\udXXX``."""

    def render(self, content: Any) -> bytes:
        r"""UTF-8 JSON, with ``\\u`` escapes only when some string cannot be UTF-8."""
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        if lone_surrogate(text) is not None:
            text = json.dumps(content, allow_nan=False, separators=(",", ":"))
        return text.encode("utf-8")


def error(status: int, message: str, **fields: Any) -> JSONResponse:
    """``{"error": message, ...}`` with ``status``."""
    return JSONReply({"error": message, **fields}, status_code=status)


def shown(value: object, limit: int = 60) -> str:
    """``repr(value)``, cut to about ``limit`` characters: what an error message quotes of the input."""
    text = repr(value) if not isinstance(value, str) else repr(value[: limit + 1])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def lone_surrogate(text: str) -> int | None:
    """The position of the first lone surrogate (U+D800..U+DFFF) in ``text``, or None when it has none."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def json_depth(body: bytes) -> int:
    """How deep the arrays and objects of a JSON text nest (brackets inside strings aside)."""
    brackets = _STRING.sub(b'""', body).translate(None, _OTHER_THAN_BRACKETS).translate(_STEPS)
    return max(accumulate(step - 1 for step in brackets), default=0)


def _no_constant(name: str) -> Any:
    raise BadRequest(400, f"the body is not JSON: {name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise BadRequest(400, f"the number {text[:40]} is out of range")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise BadRequest(400, f"a number has {len(text.lstrip('-'))} digits; the limit is {MAX_INT_DIGITS}")
    return int(text)


def _first_lone_surrogate(value: Any) -> tuple[str, int] | None:
    """The first string of ``value`` (in document order, keys included) with a lone surrogate, and where."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending.extend(reversed([part for pair in item.items() for part in pair]))
        elif isinstance(item, list):
            pending.extend(reversed(item))
        elif isinstance(item, str):
            position = lone_surrogate(item)
            if position is not None:
                return item, position
    return None


def parse_json(body: bytes) -> Any:
    """The JSON value of ``body`` (``None`` when it is empty), within the limits above.

    Raises:
        BadRequest: 400 naming what is wrong.
    """
    if body.count(b"[") + body.count(b"{") > MAX_JSON_DEPTH and json_depth(body) > MAX_JSON_DEPTH:
        raise BadRequest(400, f"the body nests arrays or objects more than {MAX_JSON_DEPTH} deep")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(400, f"the body is not UTF-8 text (byte {exc.start})") from None
    try:
        value = json.loads(text or "null", parse_constant=_no_constant, parse_float=_finite, parse_int=_bounded_int)
    except json.JSONDecodeError as exc:
        raise BadRequest(400, f"the body is not JSON: {exc}") from None
    except (ValueError, RecursionError) as exc:  # a limit of the parser itself: still the body's fault
        raise BadRequest(400, f"the body is not JSON that can be read: {type(exc).__name__}") from None
    found = _first_lone_surrogate(value)
    if found is not None:
        code = ord(found[0][found[1]])
        raise BadRequest(
            400,
            f"a string of the body holds a lone surrogate (U+{code:04X} at character {found[1]}), which is not "
            "text: send the text as UTF-8",
        )
    return value


async def read_json(request: Request, limit: int = MAX_BODY_BYTES, timeout: float = BODY_TIMEOUT_S) -> Any:
    """The request's JSON body, read at most ``limit`` bytes far and within ``timeout`` seconds.

    Raises:
        BadRequest: 413 for a body over ``limit`` (refused by its ``Content-Length`` before it is
            read, or as soon as the stream passes the limit); 408 for a body that does not arrive
            in time (the reply closes the connection); 400 for a body :func:`parse_json` refuses
            or a client that went away.
    """
    declared = request.headers.get("content-length", "").strip()
    if declared and not (declared.isascii() and declared.isdigit()):
        raise BadRequest(400, f"Content-Length is not a number: {shown(declared, 40)}")
    if declared and (len(declared) > 12 or int(declared) > limit):
        raise BadRequest(413, f"the request is {declared[:20]} bytes; the limit is {limit}")
    body = bytearray()
    try:
        async with asyncio.timeout(timeout):
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    raise BadRequest(413, f"the request is over {limit} bytes; the limit is {limit}")
    except TimeoutError:
        expected = f"{declared} promised" if declared else "no Content-Length"
        message = f"the body did not arrive within {timeout:g} s ({len(body)} bytes came, {expected})"
        raise BadRequest(408, message, {"connection": "close"}) from None
    except ClientDisconnect:
        raise BadRequest(400, "the client went away before its body arrived") from None
    return parse_json(bytes(body))
