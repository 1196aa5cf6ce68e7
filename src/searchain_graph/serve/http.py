"""What the package's HTTP apps share: bounded JSON bodies and error replies."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

__all__ = ["MAX_BODY_BYTES", "BadRequest", "error", "read_json"]

MAX_BODY_BYTES = 64 * 1024
"""The largest request body read (a question or a query is a few hundred bytes)."""


class BadRequest(Exception):
    """A request to refuse: ``status`` and a message naming the problem."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def error(status: int, message: str, **fields: Any) -> JSONResponse:
    """``{"error": message, ...}`` with ``status``."""
    return JSONResponse({"error": message, **fields}, status_code=status)


async def read_json(request: Request, limit: int = MAX_BODY_BYTES) -> Any:
    """The request's JSON body, read at most ``limit`` bytes far.

    Raises:
        BadRequest: 413 for a body over ``limit`` (refused by its ``Content-Length`` before it is
            read, or as soon as the stream passes the limit); 400 for a body that is not JSON.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BadRequest(413, f"the request is {int(declared)} bytes; the limit is {limit}")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BadRequest(413, f"the request is over {limit} bytes; the limit is {limit}")
    try:
        return json.loads(bytes(body) or b"null")
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRequest(400, f"the body is not JSON: {exc}") from exc
