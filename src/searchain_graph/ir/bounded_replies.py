"""HTTP replies bounded in time and in size: what :class:`~searchain_graph.ir.remote.RemoteRetriever` reads.

httpx's timeouts bound each wait of the network, not a whole exchange, and it buffers a reply
whole, inflating it as its ``Content-Encoding`` says. Here:

* **time**: :func:`sync_transport` gives a transport whose every wait (connect, read, write, TLS)
  is cut to the time left before the running query's deadline (:data:`DEADLINE`, set per query),
  so a server trickling a byte every half second cannot hold a query beyond its timeout (async
  queries run under ``asyncio.timeout`` instead);
* **size**: :class:`ReplyBody` takes the raw body as it arrives, inflates it in bounded steps and
  refuses it beyond a cap, so a compressed reply never takes more memory than the cap, whatever
  it would inflate to.
"""

from __future__ import annotations

import contextvars
import ssl
import time
import zlib
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx

__all__ = [
    "ACCEPTED_ENCODINGS",
    "DEADLINE",
    "MAX_REPLY_BYTES",
    "RemoteRetrievalError",
    "ReplyBody",
    "StatusError",
    "sync_transport",
]

MAX_REPLY_BYTES = 32 * 1024 * 1024
"""The default bound on a reply's size, inflated (``RemoteRetriever.max_reply_bytes``): 32 MiB.

A reply of :data:`MAX_K` passages of 10,000 characters each is about 1 MB; a bigger one is not a
search result. The bound holds while the reply is read, before it is parsed: a compressed reply
that inflates beyond it (a "zip bomb") is stopped there.
"""

ERROR_PREVIEW = 4096
"""The most bytes read of a failed reply's body (an HTTP error): its start goes in the message."""

ACCEPTED_ENCODINGS = "gzip, deflate"
"""The ``Accept-Encoding`` sent: the encodings a reply is inflated from under the size bound."""


class RemoteRetrievalError(RuntimeError):
    """The retrieval server failed, was unreachable after the retries, or did not speak the protocol."""


class StatusError(Exception):
    """An HTTP error reply (not 2xx): its status and the start of its body."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail = status, detail


DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("searchain_remote_deadline", default=None)
"""When the sync query running in this thread must end (``time.monotonic()``), read by :class:`DeadlineStream`."""


def _left(timeout: float | None) -> float | None:
    """``timeout`` cut to the time left before the running sync query's deadline (1 ms at least)."""
    deadline = DEADLINE.get()
    if deadline is None:
        return timeout
    left = max(deadline - time.monotonic(), 0.001)
    return left if timeout is None else min(timeout, left)


class DeadlineStream(httpcore.NetworkStream):
    """A connection whose every wait (read, write, TLS handshake) ends by the query's deadline.

    httpx's timeouts bound each wait of the network, not a whole exchange: a server sending a
    byte every half second never lets a read time out, and a reply can take hours. Here each wait
    is cut to the time left, so a sync query ends when its timeout runs out, whatever the server
    does (async queries run under ``asyncio.timeout``).
    """

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        return DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with connections that end their waits by the deadline (:class:`DeadlineStream`)."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        return DeadlineStream(self._backend.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return DeadlineStream(self._backend.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def sync_transport(limits: httpx.Limits) -> httpx.HTTPTransport:
    """The httpx transport, its connections ending their waits by the query's deadline (:class:`DeadlineBackend`).

    httpx takes no network backend: it is set on the transport's pool (httpx 0.28, httpcore 1.0).
    Were that pool to change, queries would still end by their deadline give or take one wait:
    the body is checked against it as it arrives.
    """
    transport = httpx.HTTPTransport(limits=limits)
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = DeadlineBackend(backend)  # type: ignore[union-attr]
    return transport


class ReplyBody:
    """A reply's body as it arrives: inflated as its ``Content-Encoding`` says, and bounded.

    A 2xx reply beyond ``cap`` bytes, inflated, raises :class:`RemoteRetrievalError`; of an error
    reply only the start is kept (:data:`ERROR_PREVIEW`). Inflating is bounded too (``zlib``'s
    ``max_length``): a compressed reply never takes more memory than the bound, whatever it
    would inflate to.
    """

    def __init__(self, shown: str, response: httpx.Response, cap: int, deadline: float) -> None:
        self.shown, self.cap, self.deadline = shown, cap, deadline
        self.ok = response.is_success
        self.limit = cap if self.ok else ERROR_PREVIEW
        self.parts: list[bytes] = []
        self.size = 0
        encoding = response.headers.get("content-encoding", "")
        codings = [c.strip().lower() for c in encoding.split(",") if c.strip().lower() not in ("", "identity")]
        self.zlib: Any = None
        self.deflate = codings == ["deflate"]  # zlib-wrapped, or raw as some servers send it (as httpx reads it)
        if codings in (["gzip"], ["x-gzip"]):
            self.zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif self.deflate:
            self.zlib = zlib.decompressobj()
        elif codings and self.ok:
            raise RemoteRetrievalError(f"{shown} answered in an encoding not asked for: Content-Encoding {encoding}")
        elif codings:  # an error reply in an encoding not asked for: its status says it
            self.limit = 0

    def feed(self, raw: bytes) -> bool:
        """Take the next part of the raw body; True once no more is wanted (an error reply's start)."""
        if time.monotonic() > self.deadline:  # each wait ends by the deadline; this ends the reply too
            raise httpx.ReadTimeout("the reply was not whole when the timeout ran out")
        while raw:
            if self.zlib is None:
                out, raw = raw, b""
            else:
                try:
                    out = self.zlib.decompress(raw, self.limit - self.size + 1)  # never more than the bound
                except zlib.error as error:
                    if self.deflate and not self.size and not self.zlib.unused_data:
                        self.zlib, self.deflate = zlib.decompressobj(-zlib.MAX_WBITS), False
                        continue
                    if not self.ok:
                        return True
                    raise RemoteRetrievalError(f"{self.shown} sent a reply that does not inflate: {error}") from None
                raw = self.zlib.unconsumed_tail
            if self._add(out):
                return True
        return False

    def _add(self, out: bytes) -> bool:
        if self.size + len(out) > self.limit:
            if not self.ok:
                self.parts.append(out[: self.limit - self.size])
                return True
            raise RemoteRetrievalError(
                f"{self.shown} answered more than the limit of {self.cap:,} bytes (max_reply_bytes)"
            )
        self.size += len(out)
        self.parts.append(out)
        return False

    def end(self, response: httpx.Response) -> bytes:
        """The whole body (:class:`StatusError` for an error reply)."""
        if self.zlib is not None and self.ok:
            try:
                self._add(self.zlib.flush())
            except zlib.error as error:
                raise RemoteRetrievalError(f"{self.shown} sent a reply that does not inflate: {error}") from None
        body = b"".join(self.parts)
        if not self.ok:
            text = " ".join(body.decode("utf-8", "replace").split())[:200]
            raise StatusError(response.status_code, text or response.reason_phrase or "no body")
        return body
