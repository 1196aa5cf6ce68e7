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
import errno
import json
import os
import random
import threading
import time
import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Mapping
from types import TracebackType
from typing import Any, Self

import httpx
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, ValidationInfo, field_validator

from searchain_graph._text import redacted_url
from searchain_graph.ir.bounded_replies import (
    ACCEPTED_ENCODINGS,
    DEADLINE,
    MAX_REPLY_BYTES,
    RemoteRetrievalError,
    ReplyBody,
    StatusError,
    sync_transport,
)

__all__ = ["MAX_K", "MAX_REPLY_BYTES", "RemoteRetrievalError", "RemoteRetriever", "is_url"]

MAX_K = 100
"""The most passages a ColBERTv2 server returns per query (the reference server's cap)."""


def is_url(text: str) -> bool:
    """True for an ``http://`` or ``https://`` address (an index given as a URL)."""
    return text.startswith(("http://", "https://"))


def _valid_k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}, got {k}")
    return k


def _transient(error: BaseException) -> bool:
    if isinstance(error, httpx.TransportError):  # connection refused or reset, closed mid-reply, timeouts
        return True
    return isinstance(error, StatusError) and (error.status == 429 or error.status >= 500)


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
                    client = httpx.Client(transport=sync_transport(_limits(connections)))
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
    connection, the HTTP status and body (also where a retry after it ran out of the time), a reply
    too big, not JSON (named with its content type) or not the protocol. The URL's password is in
    no message nor in the ``repr`` (``user:…@``); the request sends it as HTTP basic
    authentication.

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
    """The most bytes of a reply, inflated (``MAX_REPLY_BYTES``, 32 MiB); a bigger one raises at once."""

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
        request["headers"] = {"Accept-Encoding": ACCEPTED_ENCODINGS}
        request["timeout"] = httpx.Timeout(max(deadline - time.monotonic(), 0.001))
        if url.userinfo:
            request["auth"] = httpx.BasicAuth(url.username, url.password)
            url = url.copy_with(userinfo=b"")
        return {"method": "POST" if self.post else "GET", "url": url, **request}

    def _delay(self, attempt: int) -> float:
        return float(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random() / 2))  # jitter

    def _pause(self, error: Exception, attempt: int, deadline: float, answered: StatusError | None) -> float:
        """The pause before the try after ``error``; :class:`RemoteRetrievalError` when none is left.

        None is left after :attr:`max_attempts` tries, after a failure that will not pass, or when
        the pause would end past the query's deadline. ``answered`` is the last HTTP error reply of
        an earlier try: where a retry then runs out of the query's time, that reply is the cause
        the message names.
        """
        if _transient(error) and attempt < self.max_attempts:
            delay = self._delay(attempt)
            if time.monotonic() + delay < deadline:
                return delay
        shown, tries = self.shown_url, f" after {attempt} tries" if attempt > 1 else ""
        if answered is not None and isinstance(error, httpx.TimeoutException | TimeoutError):
            earlier = f" after {attempt - 1} tries" if attempt > 2 else ""
            message = (
                f"{shown} answered HTTP {answered.status}{earlier}: {answered.detail}; "
                f"the next try got no whole reply within the timeout of {self.timeout:g} s"
            )
        elif isinstance(error, StatusError):
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
        token = DEADLINE.set(deadline)  # every wait of the connection ends by then (DeadlineStream)
        try:
            with (
                self._clients.sync(self.max_connections, max(deadline - time.monotonic(), 0.0)) as client,
                client.stream(**self._request(query, k, deadline)) as response,
            ):
                body = ReplyBody(self.shown_url, response, self.max_reply_bytes, deadline)
                for raw in response.iter_raw():
                    if body.feed(raw):
                        break
                return body.end(response), response.headers.get("content-type", "")
        finally:
            DEADLINE.reset(token)

    async def _atry(self, query: str, k: int, deadline: float) -> tuple[bytes, str]:
        """One async try, as :meth:`_try`; ``asyncio.timeout`` ends it by the deadline."""
        async with asyncio.timeout(max(deadline - time.monotonic(), 0.0)):
            async with (
                self._clients.in_loop(self.max_connections, max(deadline - time.monotonic(), 0.0)) as client,
                client.stream(**self._request(query, k, deadline)) as response,
            ):
                body = ReplyBody(self.shown_url, response, self.max_reply_bytes, deadline)
                async for raw in response.aiter_raw():
                    if body.feed(raw):
                        break
                return body.end(response), response.headers.get("content-type", "")

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        deadline = time.monotonic() + self.timeout
        answered: StatusError | None = None  # the last HTTP error reply of a try
        for attempt in range(1, self.max_attempts + 1):
            try:
                body, content_type = self._try(query, k, deadline)
            except (httpx.HTTPError, StatusError) as error:
                time.sleep(self._pause(error, attempt, deadline, answered))
                answered = error if isinstance(error, StatusError) else answered
                continue
            return self._documents(body, content_type, k)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        deadline = time.monotonic() + self.timeout
        answered: StatusError | None = None  # the last HTTP error reply of a try
        for attempt in range(1, self.max_attempts + 1):
            try:
                body, content_type = await self._atry(query, k, deadline)
            except (httpx.HTTPError, StatusError, TimeoutError) as error:
                await asyncio.sleep(self._pause(error, attempt, deadline, answered))
                answered = error if isinstance(error, StatusError) else answered
                continue
            return self._documents(body, content_type, k)
        raise AssertionError("unreachable")  # pragma: no cover
