"""A retriever for any server that speaks the ColBERTv2 server protocol (DSPy's ``dspy.ColBERTv2``).

The protocol is the one of the ColBERT repository's ``server.py``, which DSPy's client and the
public ColBERTv2 Wikipedia endpoints use: ``GET URL?query=...&k=...`` (or ``POST URL`` with the
JSON ``{"query": ..., "k": ...}``) answers ``{"query": ..., "topk": [{"text", "pid", "rank",
"score", "prob", ...}]}`` best first, or ``{"error": true, "message": ...}``. ``searchain
serve-index`` serves any index of this package that way (:mod:`searchain_graph.serve.index_server`).

:class:`RemoteRetriever` is a LangChain ``BaseRetriever`` over such a URL, sync and async, with a
timeout for the whole of each query (its retries included) and retries with exponential backoff
on the errors that may pass (connection errors, a connection closed mid-reply, HTTP 429 and 5xx).
A reply is read as it comes, inflated (gzip, deflate) and counted, and refused beyond
:data:`MAX_REPLY_BYTES` (``max_reply_bytes``). Anything else, or a reply that is not the
protocol, raises :class:`RemoteRetrievalError` naming the URL, its password hidden (as in every
message and in the retriever's ``repr``). A passage ``text`` of the form ``"Title | text"`` (the
public Wikipedia abstracts) is split into its title and text when the reply has no ``title``
field. Each retriever keeps its connections open between queries (one pooled HTTP client, see
the class).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import errno
import json
import os
import random
import ssl
import threading
import time
import weakref
import zlib
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Iterator, Mapping
from types import TracebackType
from typing import Any, Self

import httpcore
import httpx
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, ValidationInfo, field_validator

from searchain_graph._text import redacted_url

__all__ = ["MAX_K", "MAX_REPLY_BYTES", "RemoteRetrievalError", "RemoteRetriever", "is_url"]

MAX_K = 100
"""The most passages a ColBERTv2 server returns per query (the reference server's cap)."""

MAX_REPLY_BYTES = 32 * 1024 * 1024
"""The default bound on a reply's size, inflated (``RemoteRetriever.max_reply_bytes``): 32 MiB.

A reply of :data:`MAX_K` passages of 10,000 characters each is about 1 MB; a bigger one is not a
search result. The bound holds while the reply is read, before it is parsed: a compressed reply
that inflates beyond it (a "zip bomb") is stopped there.
"""

_ERROR_PREVIEW = 4096
"""The most bytes read of a failed reply's body (an HTTP error): its start goes in the message."""

_ACCEPTED_ENCODINGS = "gzip, deflate"
"""The ``Accept-Encoding`` sent: the encodings a reply is inflated from under the size bound."""


class RemoteRetrievalError(RuntimeError):
    """The retrieval server failed, was unreachable after the retries, or did not speak the protocol."""


def is_url(text: str) -> bool:
    """True for an ``http://`` or ``https://`` address (an index given as a URL)."""
    return text.startswith(("http://", "https://"))


def _valid_k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}, got {k}")
    return k


class _StatusError(Exception):
    """An HTTP error reply (not 2xx): its status and the start of its body."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail = status, detail


def _transient(error: BaseException) -> bool:
    if isinstance(error, httpx.TransportError):  # connection refused or reset, closed mid-reply, timeouts
        return True
    return isinstance(error, _StatusError) and (error.status == 429 or error.status >= 500)


_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("searchain_remote_deadline", default=None)
"""When the sync query running in this thread must end (``time.monotonic()``), read by :class:`_DeadlineStream`."""


def _left(timeout: float | None) -> float | None:
    """``timeout`` cut to the time left before the running sync query's deadline (1 ms at least)."""
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = max(deadline - time.monotonic(), 0.001)
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
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
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, _left(timeout)))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's network backend with connections that end their waits by the deadline (:class:`_DeadlineStream`)."""

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
        return _DeadlineStream(self._backend.connect_tcp(host, port, _left(timeout), local_address, socket_options))

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        return _DeadlineStream(self._backend.connect_unix_socket(path, _left(timeout), socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _sync_transport(limits: httpx.Limits) -> httpx.HTTPTransport:
    """The httpx transport, its connections ending their waits by the query's deadline (:class:`_DeadlineBackend`).

    httpx takes no network backend: it is set on the transport's pool (httpx 0.28, httpcore 1.0).
    Were that pool to change, queries would still end by their deadline give or take one wait:
    the body is checked against it as it arrives.
    """
    transport = httpx.HTTPTransport(limits=limits)
    pool = getattr(transport, "_pool", None)
    backend = getattr(pool, "_network_backend", None)
    if isinstance(backend, httpcore.NetworkBackend):
        pool._network_backend = _DeadlineBackend(backend)  # type: ignore[union-attr]
    return transport


class _Body:
    """A reply's body as it arrives: inflated as its ``Content-Encoding`` says, and bounded.

    A 2xx reply beyond ``cap`` bytes, inflated, raises :class:`RemoteRetrievalError`; of an error
    reply only the start is kept (:data:`_ERROR_PREVIEW`). Inflating is bounded too (``zlib``'s
    ``max_length``): a compressed reply never takes more memory than the bound, whatever it
    would inflate to.
    """

    def __init__(self, shown: str, response: httpx.Response, cap: int, deadline: float) -> None:
        self.shown, self.cap, self.deadline = shown, cap, deadline
        self.ok = response.is_success
        self.limit = cap if self.ok else _ERROR_PREVIEW
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
        """The whole body (:class:`_StatusError` for an error reply)."""
        if self.zlib is not None and self.ok:
            try:
                self._add(self.zlib.flush())
            except zlib.error as error:
                raise RemoteRetrievalError(f"{self.shown} sent a reply that does not inflate: {error}") from None
        body = b"".join(self.parts)
        if not self.ok:
            text = " ".join(body.decode("utf-8", "replace").split())[:200]
            raise _StatusError(response.status_code, text or response.reason_phrase or "no body")
        return body


def _refused(error: BaseException) -> bool:
    cause: BaseException | None = error
    while cause is not None:  # httpx.ConnectError <- httpcore.ConnectError <- ConnectionRefusedError
        if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
            return True
        cause = cause.__cause__ or cause.__context__
    return "refused" in str(error).lower()


def _detail(error: BaseException) -> str:
    """The first non-empty message down ``error``'s causes, else the summary of its class (never empty)."""
    cause: BaseException | None = error
    while cause is not None:
        if str(cause).strip():
            return str(cause).strip()
        cause = cause.__cause__ or cause.__context__
    summary = (type(error).__doc__ or "").strip().splitlines()
    return summary[0] if summary else "no detail given"


def _unreachable(url: str, error: httpx.TransportError, timeout: float, tries: str) -> str:
    """What went wrong on the way to ``url``: where the timeout ran out, a refused connection, or the cause.

    ``url`` is the one to show (its password hidden); ``timeout`` is the whole query's.
    """
    name, limit = type(error).__name__, f"{timeout:g} s"
    if isinstance(error, httpx.ConnectTimeout):
        return f"{url} could not be reached{tries}: {name}: no connection within the timeout of {limit}"
    if isinstance(error, httpx.ReadTimeout):
        return f"{url} did not answer{tries}: {name}: no whole reply within the timeout of {limit}"
    if isinstance(error, httpx.WriteTimeout):
        return f"{url} did not take the request{tries}: {name}: not sent within the timeout of {limit}"
    if isinstance(error, httpx.PoolTimeout):
        return f"{url} was not queried{tries}: {name}: {_detail(error)} for {limit} (max_connections)"
    if isinstance(error, httpx.ConnectError) and _refused(error):
        where = httpx.URL(url)
        port = where.port or (443 if where.scheme == "https" else 80)
        return f"{url} could not be reached{tries}: {name}: connection refused (nothing listens on {where.host}:{port})"
    if isinstance(error, httpx.RemoteProtocolError | httpx.ReadError):
        return f"{url} broke off or garbled its reply{tries}: {name}: {_detail(error)}"
    return f"{url} could not be reached{tries}: {name}: {_detail(error)}"


def documents_from_reply(url: str, reply: Any, k: int) -> list[Document]:
    """The documents of a ColBERTv2 server's JSON reply, best first.

    Raises:
        RemoteRetrievalError: an ``error`` reply, or one that is not the protocol.
    """
    if not isinstance(reply, Mapping):
        raise RemoteRetrievalError(f"{url} did not answer a JSON object (got {type(reply).__name__})")
    if reply.get("error"):
        raise RemoteRetrievalError(f"{url} answered an error: {str(reply.get('message', 'no message'))[:500]}")
    topk = reply.get("topk")
    if not isinstance(topk, list):
        raise RemoteRetrievalError(f"{url} answered without a 'topk' list: not a ColBERTv2 server?")
    docs = []
    for n, hit in enumerate(topk[:k], start=1):
        if not isinstance(hit, Mapping) or not isinstance(hit.get("text"), str):
            raise RemoteRetrievalError(f"{url}: passage {n} of 'topk' has no 'text'")
        text, metadata = hit["text"], {key: value for key, value in hit.items() if key not in ("text", "long_text")}
        title = metadata.get("title")
        if isinstance(title, str) and title and text.startswith(f"{title} | "):
            text = text[len(title) + 3 :]  # searchain serve-index sends the title apart too
        elif "title" not in metadata and " | " in text:
            title, _, text = text.partition(" | ")
            metadata["title"] = title
        if "id" not in metadata and metadata.get("pid") is not None:
            metadata["id"] = str(metadata["pid"])
        docs.append(Document(page_content=text, metadata=metadata))
    return docs


def _limits(connections: int) -> httpx.Limits:
    # idle connections dropped after 4 s, before uvicorn's (and serve-index's) 5 s close them under a request
    return httpx.Limits(max_connections=connections, max_keepalive_connections=connections, keepalive_expiry=4.0)


async def _closed_with_the_loop(client: httpx.AsyncClient) -> AsyncGenerator[None, None]:
    """Suspended at its ``yield`` while ``client`` is open; closed by the loop, it closes the client.

    An event loop closes the async generators started in it when it shuts down (``asyncio.run``
    does at its end), and one that is dropped before has its ``aclose`` scheduled on its loop: so
    the client's connections are closed in the loop that opened them, before that loop closes.
    """
    try:
        yield
    finally:
        await client.aclose()


_LoopClient = tuple[httpx.AsyncClient, asyncio.Semaphore, AsyncGenerator[None, None]]
"""An event loop's client, its semaphore, and the generator that closes it with the loop."""


class _Clients:
    """The HTTP clients of one retriever: one sync client, one async client per event loop.

    Opened on first use, from any thread. A copy, a deep copy or an unpickled one starts empty:
    connections are not shared between retrievers, nor carried into another process. Each client
    takes at most ``connections`` requests at once (a semaphore; the others wait up to the
    timeout): httpcore 1.0's pool, when it has to queue requests, can close a connection it has
    just handed to another request (encode/httpcore#1110), so it is never made to queue. All
    its connections are kept alive (httpcore closes idle ones above the keep-alive count).
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._sync: tuple[httpx.Client, threading.Semaphore] | None = None
        self._closer: weakref.finalize[[], _Clients] | None = None
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopClient] = weakref.WeakKeyDictionary()

    def __reduce__(self) -> tuple[type[_Clients], tuple[()]]:
        return _Clients, ()

    def __copy__(self) -> _Clients:
        return _Clients()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Clients:
        return _Clients()

    def _after_fork(self) -> None:
        if self._pid != os.getpid():  # a forked child: the parent's sockets are not its own
            self._reset()

    def _sync_client(self, connections: int) -> tuple[httpx.Client, threading.Semaphore]:
        self._after_fork()
        entry = self._sync
        if entry is None or entry[0].is_closed:
            with self._lock:
                if self._sync is None or self._sync[0].is_closed:
                    client = httpx.Client(transport=_sync_transport(_limits(connections)))
                    self._sync = (client, threading.Semaphore(connections))
                    # a retriever dropped unclosed still closes its sockets (no ResourceWarning)
                    self._closer = weakref.finalize(self, client.close)
                entry = self._sync
        return entry

    @contextlib.contextmanager
    def sync(self, connections: int, timeout: float) -> Iterator[httpx.Client]:
        """The sync client, once one of its ``connections`` is free (``httpx.PoolTimeout`` after ``timeout`` s)."""
        client, gate = self._sync_client(connections)
        if not gate.acquire(timeout=timeout):
            raise httpx.PoolTimeout(f"all {connections} connections stayed busy")
        try:
            yield client
        finally:
            gate.release()

    async def _loop_client(self, connections: int) -> _LoopClient:
        self._after_fork()
        loop = asyncio.get_running_loop()
        with self._lock:
            known = self._async.get(loop)
            if known is not None and not known[0].is_closed:
                return known
            client = httpx.AsyncClient(limits=_limits(connections))
            entry = self._async[loop] = (client, asyncio.Semaphore(connections), _closed_with_the_loop(client))
        await anext(entry[2])  # runs to its yield at once: the loop now closes it as it shuts down
        return entry

    @contextlib.asynccontextmanager
    async def in_loop(self, connections: int, timeout: float) -> AsyncIterator[httpx.AsyncClient]:
        """The running event loop's client, once one of its ``connections`` is free (as :meth:`sync`)."""
        client, gate, _ = await self._loop_client(connections)
        try:
            async with asyncio.timeout(timeout):
                await gate.acquire()
        except TimeoutError:
            raise httpx.PoolTimeout(f"all {connections} connections stayed busy") from None
        try:
            yield client
        finally:
            gate.release()

    def close(self) -> None:
        """Close the sync client; each async client is closed in its own loop (see :meth:`aclose`)."""
        with self._lock:
            entry, closer, self._sync, self._closer = self._sync, self._closer, None, None
            self._async.clear()  # the dropped keepers have their loops close the clients
        if closer is not None:
            closer.detach()
        if entry is not None:
            entry[0].close()

    async def aclose(self) -> None:
        """Close the running loop's async client, awaiting it, then the others as :meth:`close` does."""
        with self._lock:
            entry = self._async.pop(asyncio.get_running_loop(), None)
        if entry is not None:
            await entry[2].aclose()
        self.close()


class RemoteRetriever(BaseRetriever):
    """A LangChain retriever over a ColBERTv2-protocol server (``searchain serve-index``, DSPy's servers).

    Connections are kept open between queries: a retriever opens one pooled HTTP client on its
    first sync query and one per event loop for async ones, shared by all threads and tasks
    (at most :attr:`max_connections` connections each). An async client is closed by its event
    loop as it shuts down (at the end of ``asyncio.run``), so a retriever can be used by several
    successive ``asyncio.run`` calls. :meth:`close` (or ``with retriever:``) closes the sync
    client and :meth:`aclose` (or ``async with retriever:``) also the running loop's; a later
    query opens new connections. A retriever dropped unclosed closes its sync connections when
    it is collected. Copies, deep copies and unpickled retrievers open their own connections;
    the clients are not fields (``model_dump`` and pickles hold the settings only).

    A query has :attr:`timeout` seconds in all: to get a pooled connection when
    :attr:`max_connections` are busy, to connect, to send, to receive the whole reply, for every
    try and the pauses between them. A server that trickles its reply is cut off when the time
    is up. Transient failures (connection errors, a connection closed mid-reply, HTTP 429 and
    5xx) are tried again up to :attr:`max_attempts` tries in all, after :attr:`backoff` seconds
    doubled for each next try (with jitter), while the time left allows. A reply is read as it
    comes and refused beyond :attr:`max_reply_bytes`, inflated. The final failure raises
    :class:`RemoteRetrievalError` naming the URL and the cause: where the time ran out, a refused
    connection, the HTTP status and body, a reply too big, not JSON (named with its content type)
    or not the protocol. The URL's password is in no message nor in the ``repr`` (``user:…@``);
    the request sends it as HTTP basic authentication.

    Example:
        >>> with RemoteRetriever(url="http://127.0.0.1:8893/", k=1) as retriever:  # doctest: +SKIP
        ...     retriever.invoke("Where was Kevin Drew born?")
    """

    url: str
    """The search endpoint, e.g. ``http://127.0.0.1:8893/`` or ``http://host:2017/wiki17_abstracts``."""
    k: int = 1
    """Passages returned per query (at most :data:`MAX_K`); ``invoke(q, k=n)`` overrides it."""
    timeout: float = 10.0
    """Seconds per query, in all: its tries, the pauses between them, and the whole of each reply."""
    max_attempts: int = 3
    """Tries per query on transient errors (1: no retry)."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each next one (with jitter)."""
    post: bool = False
    """Send ``POST`` with a JSON body instead of ``GET`` with query parameters."""
    max_connections: int = 100
    """Connections open at once per client (read as it opens); more queries wait. An idle one stays open 4 s."""
    max_reply_bytes: int = MAX_REPLY_BYTES
    """The most bytes of a reply, inflated (:data:`MAX_REPLY_BYTES`); a bigger one raises at once."""

    model_config = ConfigDict(hide_input_in_errors=True)  # a URL refused is not echoed, password and all
    _clients: _Clients = PrivateAttr(default_factory=_Clients)

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if not is_url(url):
            raise ValueError(f"url must start with http:// or https://, got {redacted_url(url)!r}")
        try:
            httpx.URL(url)
        except httpx.InvalidURL as error:
            shown = redacted_url(url)
            why = _detail(error) if shown == url else "check the host and the port"
            raise ValueError(f"url is not a valid URL: {shown!r} ({why})") from None
        return url

    @field_validator("k")
    @classmethod
    def _check_k(cls, k: int) -> int:
        return _valid_k(k)

    @field_validator("max_attempts", "max_connections", "max_reply_bytes")
    @classmethod
    def _check_at_least_one(cls, value: int, info: ValidationInfo) -> int:
        if value < 1:
            raise ValueError(f"{info.field_name} must be at least 1, got {value}")
        return value

    @property
    def shown_url(self) -> str:
        """:attr:`url` as messages show it: its password hidden (``http://me:…@host/``)."""
        return redacted_url(self.url)

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        for name, value in super().__repr_args__():
            yield name, (self.shown_url if name == "url" else value)

    def __copy__(self) -> Self:
        duplicate = super().__copy__()
        duplicate._clients = _Clients()  # its own connections (deep copies and pickles get fresh ones too)
        return duplicate

    def close(self) -> None:
        """Close the connections of sync queries (async clients close with their event loops)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the connections of the running event loop and those of sync queries."""
        await self._clients.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def _request(self, query: str, k: int, deadline: float) -> dict[str, Any]:
        """The arguments of one try's ``client.stream``: the URL without its password (sent as basic auth)."""
        url = httpx.URL(self.url)
        payload = {"query": query, "k": k}
        request: dict[str, Any] = {"json": payload} if self.post else {"params": payload}
        request["headers"] = {"Accept-Encoding": _ACCEPTED_ENCODINGS}
        request["timeout"] = httpx.Timeout(max(deadline - time.monotonic(), 0.001))
        if url.userinfo:
            request["auth"] = httpx.BasicAuth(url.username, url.password)
            url = url.copy_with(userinfo=b"")
        return {"method": "POST" if self.post else "GET", "url": url, **request}

    def _delay(self, attempt: int) -> float:
        return float(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random() / 2))  # jitter

    def _pause(self, error: Exception, attempt: int, deadline: float) -> float:
        """The pause before the try after ``error``; :class:`RemoteRetrievalError` when none is left.

        None is left after :attr:`max_attempts` tries, after a failure that will not pass, or when
        the pause would end past the query's deadline.
        """
        if _transient(error) and attempt < self.max_attempts:
            delay = self._delay(attempt)
            if time.monotonic() + delay < deadline:
                return delay
        shown, tries = self.shown_url, f" after {attempt} tries" if attempt > 1 else ""
        if isinstance(error, _StatusError):
            message = f"{shown} answered HTTP {error.status}{tries}: {error.detail}"
        elif isinstance(error, httpx.TransportError):
            message = _unreachable(shown, error, self.timeout, tries)
        elif isinstance(error, TimeoutError):  # the async query's deadline
            limit = f"{self.timeout:g} s"
            message = f"{shown} did not answer{tries}: TimeoutError: no whole reply within the timeout of {limit}"
        else:
            message = f"{shown} could not be reached{tries}: {type(error).__name__}: {_detail(error)}"
        raise RemoteRetrievalError(message) from error

    def _documents(self, body: bytes, content_type: str, k: int) -> list[Document]:
        """The documents of a whole reply; :class:`RemoteRetrievalError` for one that is not JSON or the protocol."""
        try:
            reply = json.loads(body)
        except RecursionError:
            raise RemoteRetrievalError(f"{self.shown_url} answered JSON nested too deeply to read") from None
        except ValueError as error:  # not JSON, or not UTF-8 (UnicodeDecodeError)
            kind = f" (a {content_type.split(';')[0].strip()} reply)" if content_type else ""
            detail = _detail(error)[:200]
            raise RemoteRetrievalError(f"{self.shown_url} did not answer JSON{kind}: {detail}") from None
        try:
            return documents_from_reply(self.shown_url, reply, k)
        except RecursionError:  # a value nested deep enough to fail where it is copied or shown
            raise RemoteRetrievalError(f"{self.shown_url} answered JSON nested too deeply to read") from None

    def _k(self, k: int | None) -> int:
        return self.k if k is None else _valid_k(k)

    def _try(self, query: str, k: int, deadline: float) -> tuple[bytes, str]:
        """One sync try: the whole body of a 2xx reply and its content type."""
        token = _DEADLINE.set(deadline)  # every wait of the connection ends by then (_DeadlineStream)
        try:
            with (
                self._clients.sync(self.max_connections, max(deadline - time.monotonic(), 0.0)) as client,
                client.stream(**self._request(query, k, deadline)) as response,
            ):
                body = _Body(self.shown_url, response, self.max_reply_bytes, deadline)
                for raw in response.iter_raw():
                    if body.feed(raw):
                        break
                return body.end(response), response.headers.get("content-type", "")
        finally:
            _DEADLINE.reset(token)

    async def _atry(self, query: str, k: int, deadline: float) -> tuple[bytes, str]:
        """One async try, as :meth:`_try`; ``asyncio.timeout`` ends it by the deadline."""
        async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
            async with (
                self._clients.in_loop(self.max_connections, max(deadline - time.monotonic(), 0.0)) as client,
                client.stream(**self._request(query, k, deadline)) as response,
            ):
                body = _Body(self.shown_url, response, self.max_reply_bytes, deadline)
                async for raw in response.aiter_raw():
                    if body.feed(raw):
                        break
                return body.end(response), response.headers.get("content-type", "")

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        deadline = time.monotonic() + self.timeout
        for attempt in range(1, self.max_attempts + 1):
            try:
                body, content_type = self._try(query, k, deadline)
            except (httpx.HTTPError, _StatusError) as error:
                time.sleep(self._pause(error, attempt, deadline))
                continue
            return self._documents(body, content_type, k)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        deadline = time.monotonic() + self.timeout
        for attempt in range(1, self.max_attempts + 1):
            try:
                body, content_type = await self._atry(query, k, deadline)
            except (httpx.HTTPError, _StatusError, TimeoutError) as error:
                await asyncio.sleep(self._pause(error, attempt, deadline))
                continue
            return self._documents(body, content_type, k)
        raise AssertionError("unreachable")  # pragma: no cover
