"""A retriever for any server that speaks the ColBERTv2 server protocol (DSPy's ``dspy.ColBERTv2``).

The protocol is the one of the ColBERT repository's ``server.py``, which DSPy's client and the
public ColBERTv2 Wikipedia endpoints use: ``GET URL?query=...&k=...`` (or ``POST URL`` with the
JSON ``{"query": ..., "k": ...}``) answers ``{"query": ..., "topk": [{"text", "pid", "rank",
"score", "prob", ...}]}`` best first, or ``{"error": true, "message": ...}``. ``searchain
serve-index`` serves any index of this package that way (:mod:`searchain_graph.serve.index_server`).

:class:`RemoteRetriever` is a LangChain ``BaseRetriever`` over such a URL, sync and async, with a
timeout per request and retries with exponential backoff on the errors that may pass (connection
errors, timeouts, HTTP 429 and 5xx). Anything else, or a reply that is not the protocol, raises
:class:`RemoteRetrievalError` naming the URL. A passage ``text`` of the form ``"Title | text"``
(the public Wikipedia abstracts) is split into its title and text when the reply has no
``title`` field. Each retriever keeps its connections open between queries (one pooled HTTP
client, see the class).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
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
from pydantic import PrivateAttr, ValidationInfo, field_validator

__all__ = ["MAX_K", "RemoteRetrievalError", "RemoteRetriever", "is_url"]

MAX_K = 100
"""The most passages a ColBERTv2 server returns per query (the reference server's cap)."""


class RemoteRetrievalError(RuntimeError):
    """The retrieval server failed, was unreachable after the retries, or did not speak the protocol."""


def is_url(text: str) -> bool:
    """True for an ``http://`` or ``https://`` address (an index given as a URL)."""
    return text.startswith(("http://", "https://"))


def _valid_k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}, got {k}")
    return k


def _transient(error: BaseException) -> bool:
    if isinstance(error, httpx.TransportError):  # connection refused or reset, timeouts
        return True
    return isinstance(error, httpx.HTTPStatusError) and (
        error.response.status_code == 429 or error.response.status_code >= 500
    )


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
    """What went wrong on the way to ``url``: which timeout and its limit, a refused connection, or the cause."""
    name, limit = type(error).__name__, f"{timeout:g} s"
    if isinstance(error, httpx.ConnectTimeout):
        return f"{url} could not be reached{tries}: {name}: no connection within the connect timeout of {limit}"
    if isinstance(error, httpx.ReadTimeout):
        return f"{url} did not answer{tries}: {name}: no reply within the read timeout of {limit}"
    if isinstance(error, httpx.WriteTimeout):
        return f"{url} did not take the request{tries}: {name}: not sent within the write timeout of {limit}"
    if isinstance(error, httpx.PoolTimeout):
        return f"{url} was not queried{tries}: {name}: {_detail(error)} for {limit} (max_connections)"
    if isinstance(error, httpx.ConnectError) and _refused(error):
        where = httpx.URL(url)
        port = where.port or (443 if where.scheme == "https" else 80)
        return f"{url} could not be reached{tries}: {name}: connection refused (nothing listens on {where.host}:{port})"
    return f"{url} could not be reached{tries}: {name}: {_detail(error)}"


def documents_from_reply(url: str, reply: Any, k: int) -> list[Document]:
    """The documents of a ColBERTv2 server's JSON reply, best first.

    Raises:
        RemoteRetrievalError: an ``error`` reply, or one that is not the protocol.
    """
    if not isinstance(reply, Mapping):
        raise RemoteRetrievalError(f"{url} did not answer a JSON object (got {type(reply).__name__})")
    if reply.get("error"):
        raise RemoteRetrievalError(f"{url} answered an error: {reply.get('message', 'no message')}")
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
                    client = httpx.Client(limits=_limits(connections))
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

    Each try of a query has :attr:`timeout` seconds to connect, to send, and to receive each
    part of the reply (and to get a pooled connection when :attr:`max_connections` are busy).
    Transient failures (connection errors, timeouts, HTTP 429 and 5xx) are tried again up to
    :attr:`max_attempts` tries in all, after :attr:`backoff` seconds doubled for each next try
    (with jitter). The final failure raises :class:`RemoteRetrievalError` naming the URL and the
    cause: which timeout ran out and its limit, a refused connection, or the HTTP status and body.

    Example:
        >>> with RemoteRetriever(url="http://127.0.0.1:8893/", k=1) as retriever:  # doctest: +SKIP
        ...     retriever.invoke("Where was Kevin Drew born?")
    """

    url: str
    """The search endpoint, e.g. ``http://127.0.0.1:8893/`` or ``http://host:2017/wiki17_abstracts``."""
    k: int = 1
    """Passages returned per query (at most :data:`MAX_K`); ``invoke(q, k=n)`` overrides it."""
    timeout: float = 10.0
    """Seconds per request: each of connecting, sending, reading, and waiting for a pooled connection."""
    max_attempts: int = 3
    """Tries per query on transient errors (1: no retry)."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each next one (with jitter)."""
    post: bool = False
    """Send ``POST`` with a JSON body instead of ``GET`` with query parameters."""
    max_connections: int = 100
    """Connections open at once per client (read as it opens); more queries wait. An idle one stays open 4 s."""

    _clients: _Clients = PrivateAttr(default_factory=_Clients)

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if not is_url(url):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        return url

    @field_validator("k")
    @classmethod
    def _check_k(cls, k: int) -> int:
        return _valid_k(k)

    @field_validator("max_attempts", "max_connections")
    @classmethod
    def _check_at_least_one(cls, value: int, info: ValidationInfo) -> int:
        if value < 1:
            raise ValueError(f"{info.field_name} must be at least 1, got {value}")
        return value

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

    def _request(self, query: str, k: int) -> dict[str, Any]:
        payload = {"query": query, "k": k}
        body: dict[str, Any] = {"json": payload} if self.post else {"params": payload}
        return {**body, "timeout": httpx.Timeout(self.timeout)}

    def _delay(self, attempt: int) -> float:
        return float(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random() / 2))  # jitter

    def _raise_unless_retried(self, error: httpx.HTTPError, attempt: int) -> None:
        """Raise :class:`RemoteRetrievalError` for ``error`` unless it is transient and tries remain."""
        if _transient(error) and attempt < self.max_attempts:
            return
        tries = f" after {attempt} tries" if attempt > 1 else ""
        if isinstance(error, httpx.HTTPStatusError):
            body = error.response.text[:200] or error.response.reason_phrase or "no body"
            message = f"{self.url} answered HTTP {error.response.status_code}{tries}: {body}"
        elif isinstance(error, httpx.TransportError):
            message = _unreachable(self.url, error, self.timeout, tries)
        else:
            message = f"{self.url} could not be reached{tries}: {type(error).__name__}: {_detail(error)}"
        raise RemoteRetrievalError(message) from error

    def _not_json(self, error: ValueError) -> RemoteRetrievalError:
        return RemoteRetrievalError(f"{self.url} did not answer JSON: {_detail(error)}")

    def _k(self, k: int | None) -> int:
        return self.k if k is None else _valid_k(k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        for attempt in range(1, self.max_attempts + 1):
            try:
                with self._clients.sync(self.max_connections, self.timeout) as client:
                    response = client.request("POST" if self.post else "GET", self.url, **self._request(query, k))
                response.raise_for_status()
                reply = response.json()
            except httpx.HTTPError as error:
                self._raise_unless_retried(error, attempt)
                time.sleep(self._delay(attempt))
                continue
            except ValueError as error:
                raise self._not_json(error) from error
            return documents_from_reply(self.url, reply, k)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        for attempt in range(1, self.max_attempts + 1):
            try:
                async with self._clients.in_loop(self.max_connections, self.timeout) as client:
                    method = "POST" if self.post else "GET"
                    response = await client.request(method, self.url, **self._request(query, k))
                response.raise_for_status()
                reply = response.json()
            except httpx.HTTPError as error:
                self._raise_unless_retried(error, attempt)
                await asyncio.sleep(self._delay(attempt))
                continue
            except ValueError as error:
                raise self._not_json(error) from error
            return documents_from_reply(self.url, reply, k)
        raise AssertionError("unreachable")  # pragma: no cover
