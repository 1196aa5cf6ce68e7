"""Who may talk to the package's HTTP apps (the ``Host`` named, the ``Origin``, a token), and JSON errors.

A server on 127.0.0.1 is not reached by other machines, but it is by the user's own browser:

* **DNS rebinding.** A page on ``evil.example`` whose name is then pointed at 127.0.0.1 reads
  this server as its own origin. Its requests still say ``Host: evil.example``, so every request
  whose ``Host`` is not a name this server answers to gets ``421``: the loopback names
  (``localhost``, ``127.0.0.1``, ``[::1]``) for a loopback bind, the bound name or address
  otherwise, and the names given (``--allow-host``).
* **Cross-origin writes.** Any page may ``POST`` a ``text/plain`` body here without a CORS
  preflight. A request that is not ``GET``/``HEAD``/``OPTIONS`` and carries an ``Origin`` other
  than this server's own (or ``Sec-Fetch-Site: cross-site``) gets ``403``. Clients that send no
  ``Origin`` (``curl``, Python) are not browsers and pass.
* **Other machines.** With a token, every request must carry it, as ``Authorization: Bearer
  TOKEN`` or as ``?token=TOKEN`` (what a browser's address bar and ``EventSource`` can send);
  else ``401``. ``searchain serve`` always has one when it listens beyond loopback.
* **Framing (clickjacking).** A page elsewhere could show this one in a hidden frame and have the
  user click its buttons (ask, accept a correction). Every response that passes the guard, its
  refusals included, says it may not be framed: ``X-Frame-Options: DENY`` and
  ``Content-Security-Policy: frame-ancestors 'none'`` (added to a policy the response already
  has), :func:`deny_framing`.

:func:`json_errors` makes every refusal of an app, its 404 and 405 and an unexpected failure
included, the app's own JSON error body.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import secrets
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import Headers, MutableHeaders, QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from searchain_graph.serve.http import BadRequest, shown

__all__ = [
    "LOOPBACK_NAMES",
    "TOKEN_PARAM",
    "Guard",
    "Refuse",
    "check_token",
    "deny_framing",
    "host_name",
    "is_loopback",
    "json_errors",
    "new_token",
    "served_hosts",
]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""The names a server bound to a loopback address answers to."""
TOKEN_PARAM = "token"
"""The query parameter that carries the token (``Authorization: Bearer`` does too)."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
_TOKEN = re.compile(r"[A-Za-z0-9._~-]{16,256}")

FRAME_ANCESTORS = "frame-ancestors 'none'"
"""The Content-Security-Policy directive that forbids every page to frame a response."""

Refuse = Callable[[int, str], Response]
"""An app's error reply: ``(status, message) -> Response`` in its own protocol."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine only."""
    name = host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """The name of a ``Host`` header, lower case, without its port, brackets or trailing dot."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    if value.count(":") == 1:
        value = value.partition(":")[0]
    return value.rstrip(".")


def served_hosts(bind: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The ``Host`` names a server bound to ``bind`` answers to, or None for any (``extra`` holds ``*``).

    A loopback bind answers to the loopback names; an unspecified address (every interface)
    to the loopback names and ``extra``; any other bind to its own name or address and ``extra``.
    """
    names = [name.strip() for name in extra if name.strip()]
    if "*" in names:
        return None
    allowed = {host_name(name) for name in names}
    try:
        unspecified = ipaddress.ip_address(bind.strip("[]")).is_unspecified
    except ValueError:
        unspecified = False
    if is_loopback(bind) or unspecified:
        allowed.update(LOOPBACK_NAMES)
    if not unspecified:
        allowed.add(host_name(bind if ":" not in bind.strip("[]") else f"[{bind.strip('[]')}]"))
    return frozenset(allowed)


def new_token() -> str:
    """A random token (32 URL-safe characters)."""
    return secrets.token_urlsafe(24)


def check_token(token: str) -> str:
    """``token``, if it is 16 to 256 characters of ``A-Z a-z 0-9 . _ ~ -`` (safe in a URL and a page).

    Raises:
        ValueError: it is not.
    """
    if not _TOKEN.fullmatch(token):
        raise ValueError("a token must be 16 to 256 characters of A-Z, a-z, 0-9, '.', '_', '~' and '-'")
    return token


def deny_framing(headers: MutableHeaders) -> None:
    """Forbid framing: ``X-Frame-Options: DENY`` and ``frame-ancestors 'none'``, added to any CSP already set.

    A policy that already names ``frame-ancestors`` is left as it is.
    """
    headers["x-frame-options"] = "DENY"
    policy = headers.get("content-security-policy")
    if policy is None or not policy.strip():
        headers["content-security-policy"] = FRAME_ANCESTORS
    elif "frame-ancestors" not in policy.lower():
        headers["content-security-policy"] = f"{policy.strip().rstrip(';')}; {FRAME_ANCESTORS}"


class Guard:
    """ASGI middleware: refuses requests by their ``Host``, ``Origin`` and token; forbids framing (see the module).

    Args:
        app: The app to guard.
        refuse: The app's error reply.
        hosts: The ``Host`` names to answer (:func:`served_hosts`); None answers any.
        token: The token every request must carry, or None.
    """

    def __init__(
        self, app: ASGIApp, *, refuse: Refuse, hosts: Iterable[str] | None = LOOPBACK_NAMES, token: str | None = None
    ) -> None:
        self.app = app
        self.refuse = refuse
        self.hosts = None if hosts is None else frozenset(host_name(h) for h in hosts)
        self.token = None if token is None else check_token(token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on, or answer it with the refusal; either reply forbids framing."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_unframed(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                deny_framing(MutableHeaders(scope=message))
            await send(message)

        problem = self.check(scope)
        if problem is None:
            await self.app(scope, receive, send_unframed)
            return
        status, text = problem
        response = self.refuse(status, text)
        if status == 401:
            response.headers["www-authenticate"] = "Bearer"
        await response(scope, receive, send_unframed)

    def check(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, message)`` for a request to refuse, or None for one to serve."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if self.hosts is not None and host_name(host) not in self.hosts:
            served = ", ".join(sorted(self.hosts))
            return 421, f"this server does not answer to Host {shown(host, 80)}: it answers to {served}"
        if self.token is not None and not self._carries_token(scope, headers):
            return 401, f"send the token: 'Authorization: Bearer TOKEN' or '?{TOKEN_PARAM}=TOKEN'"
        if scope["method"] not in SAFE_METHODS:
            origin = headers.get("origin")
            if origin is not None and (origin == "null" or urlsplit(origin).netloc.lower() != host.lower()):
                return 403, f"requests from another origin ({shown(origin, 80)}) may only read"
            if headers.get("sec-fetch-site") in ("cross-site", "same-site"):
                return 403, "requests from another site may only read"
        return None

    def _carries_token(self, scope: Scope, headers: Headers) -> bool:
        assert self.token is not None
        given = QueryParams(scope.get("query_string", b"")).get(TOKEN_PARAM)
        authorization = headers.get("authorization", "")
        if authorization[:7].lower() == "bearer ":
            given = authorization[7:].strip()
        return given is not None and hmac.compare_digest(given.encode("utf-8", "replace"), self.token.encode())


def json_errors(refuse: Refuse) -> dict[Any, Callable[[Request, Exception], Response]]:
    """Starlette ``exception_handlers`` that answer in the app's own JSON: refusals, 404, 405 and 500."""

    def refused(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, BadRequest)
        response = refuse(exc.status, exc.message)
        response.headers.update(exc.headers)
        return response

    def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        path = shown(request.url.path, 80)
        if exc.status_code == 404:
            message = f"nothing is served at {path}"
        elif exc.status_code == 405:
            allowed = (exc.headers or {}).get("Allow", "")
            message = f"{request.method} is not allowed on {path}; use {allowed}"
        else:
            message = str(exc.detail)
        response = refuse(exc.status_code, message)
        response.headers.update(exc.headers or {})
        return response

    def failed(request: Request, exc: Exception) -> Response:  # uvicorn logs the traceback
        return refuse(500, f"the server failed ({type(exc).__name__}); its log says more")

    return {BadRequest: refused, HTTPException: http_error, Exception: failed}
