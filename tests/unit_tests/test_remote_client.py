"""``RemoteRetriever``'s connections: one pooled client reused, clear errors, event loops, copies, no leaks.

The servers are real and on 127.0.0.1: a small ColBERTv2-protocol app under uvicorn that notes
the client port of each request (one port per connection), a socket server that accepts and
never answers, one whose backlog is full (connections time out), and a port nothing listens on.
Every test fails on a ``ResourceWarning`` (an unclosed socket or transport), collected with
``gc.collect()`` before it ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import pickle
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.documents import Document
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from searchain_graph.ir.remote import RemoteRetrievalError, RemoteRetriever
from tests.helpers import free_port, served

pytestmark = [
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),  # loopback only
    pytest.mark.filterwarnings("error::ResourceWarning", "error::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(autouse=True)
def no_resource_warnings() -> Iterator[None]:
    """Fail on any ResourceWarning raised during the test, including by objects collected at its end."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        yield
        gc.collect()
    leaks = [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]
    assert not leaks, leaks


class Peers:
    """The client ports a server saw, one per connection."""

    def __init__(self) -> None:
        self.ports: list[int] = []

    @property
    def connections(self) -> int:
        return len(set(self.ports))


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, Peers]]:
    """A ColBERTv2-protocol server answering each query with one passage that repeats it."""
    peers = Peers()

    async def answer(request: Request) -> Response:
        assert request.client is not None
        peers.ports.append(request.client.port)
        params = dict(request.query_params) if request.method == "GET" else await request.json()
        query = params["query"]
        return JSONResponse({"query": query, "topk": [{"text": f"Echo | {query}", "pid": 1, "rank": 1, "score": 1.0}]})

    with served(Starlette(routes=[Route("/", answer, methods=["GET", "POST"])])) as base:
        yield base, peers


def echoed(docs: list[Document], query: str) -> bool:
    return [d.page_content for d in docs] == [query] and docs[0].metadata["title"] == "Echo"


def test_one_connection_serves_many_sync_queries(server: tuple[str, Peers]) -> None:
    url, peers = server
    peers.ports.clear()
    with RemoteRetriever(url=url) as retriever:
        for n in range(30):
            assert echoed(retriever.invoke(f"q{n}"), f"q{n}")
        assert echoed(RemoteRetriever.model_validate({"url": url, "post": True}).invoke("posted"), "posted")
    assert len(peers.ports) == 31 and peers.connections == 2  # 30 queries on one, the POST one on its own


def test_threads_share_the_pool_and_get_their_own_replies(server: tuple[str, Peers]) -> None:
    url, peers = server
    peers.ports.clear()
    with RemoteRetriever(url=url) as retriever, ThreadPoolExecutor(8) as pool:
        queries = [f"thread query {n}" for n in range(160)]
        for query, docs in zip(queries, pool.map(retriever.invoke, queries), strict=True):
            assert echoed(docs, query)
    assert peers.connections <= 8
    peers.ports.clear()
    with RemoteRetriever(url=url, max_connections=2) as narrow, ThreadPoolExecutor(8) as pool:
        assert all(echoed(docs, "same") for docs in pool.map(narrow.invoke, ["same"] * 40))
    assert peers.connections <= 2


def test_async_queries_reuse_connections_over_successive_event_loops(server: tuple[str, Peers]) -> None:
    url, peers = server
    peers.ports.clear()
    retriever = RemoteRetriever(url=url)

    async def burst(tag: str) -> None:
        queries = [f"{tag} {n}" for n in range(12)]
        for query, docs in zip(queries, await asyncio.gather(*(retriever.ainvoke(q) for q in queries)), strict=True):
            assert echoed(docs, query)
        for n in range(10):  # one after the other: the connections of the burst are reused
            assert echoed(await retriever.ainvoke(f"{tag} then {n}"), f"{tag} then {n}")

    asyncio.run(burst("first"))  # the loop closes its client as it ends
    first = peers.connections
    asyncio.run(burst("second"))  # a new loop: a new client, not the closed loop's
    assert 1 <= first <= 12 and peers.connections - first <= 12 and len(peers.ports) == 44
    assert echoed(retriever.invoke("sync too"), "sync too")
    retriever.close()


async def test_async_with_closes_the_running_loops_client(server: tuple[str, Peers]) -> None:
    url, peers = server
    peers.ports.clear()
    async with RemoteRetriever(url=url, post=True) as retriever:
        for n in range(5):
            assert echoed(await retriever.ainvoke(f"a{n}"), f"a{n}")
        assert echoed(retriever.invoke("mixed"), "mixed")
    assert peers.connections == 2  # one async, one sync
    assert echoed(await retriever.ainvoke("again"), "again")  # reopens after aclose
    await retriever.aclose()
    assert peers.connections == 3


def test_copies_and_pickles_open_their_own_connections(server: tuple[str, Peers]) -> None:
    url, peers = server
    original = RemoteRetriever(url=url, k=1, timeout=5.0)
    original.invoke("warm")
    copies = [pickle.loads(pickle.dumps(original)), copy.copy(original), copy.deepcopy(original)]
    copies.append(original.model_copy(update={"timeout": 3.0}))
    assert original.model_dump() == {**copies[0].model_dump()} and "_clients" not in original.model_dump()
    peers.ports.clear()
    for duplicate in copies:
        assert echoed(duplicate.invoke("copy"), "copy")
        duplicate.close()
    assert echoed(original.invoke("original"), "original")
    original.close()
    assert peers.connections == 5 and copies[3].timeout == 3.0


def test_a_retriever_dropped_unclosed_closes_its_sockets(server: tuple[str, Peers]) -> None:
    url, _ = server
    retriever = RemoteRetriever(url=url)
    assert echoed(retriever.invoke("then dropped"), "then dropped")
    del retriever  # the autouse fixture collects it and fails on an unclosed socket


def test_a_connection_the_server_closed_while_idle_is_not_an_error() -> None:
    import uvicorn

    peers = Peers()

    async def answer(request: Request) -> Response:
        assert request.client is not None
        peers.ports.append(request.client.port)
        return JSONResponse({"query": "q", "topk": [{"text": "Echo | q", "pid": 1, "rank": 1, "score": 1.0}]})

    port = free_port()  # keep-alive of 0.2 s: the server closes an idle connection fast
    app = Starlette(routes=[Route("/", answer)])
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, timeout_keep_alive=0.2))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            assert thread.is_alive()
            time.sleep(0.01)
        with RemoteRetriever(url=f"http://127.0.0.1:{port}/", max_attempts=1) as retriever:  # no retry to hide it
            for _ in range(3):
                assert echoed(retriever.invoke("q"), "q")
                time.sleep(0.5)
            asyncio.run(retriever.ainvoke("q"))
        assert peers.connections == 4  # a new connection each time, opened without an error
    finally:
        server.should_exit = True
        thread.join(10)


@contextlib.contextmanager
def hung_server() -> Iterator[str]:
    """A socket server on 127.0.0.1 that accepts connections, reads nothing and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                accepted.append(listener.accept()[0])

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        done.set()
        thread.join(5)
        for connection in accepted:
            connection.close()
        listener.close()


def test_a_hung_server_is_a_read_timeout_within_the_bound() -> None:
    with hung_server() as url, RemoteRetriever(url=url, timeout=0.3, max_attempts=2, backoff=0.01) as retriever:
        started = time.monotonic()
        message = rf"^{url} did not answer after 2 tries: ReadTimeout: no reply within the read timeout of 0\.3 s$"
        with pytest.raises(RemoteRetrievalError, match=message):
            retriever.invoke("anyone?")
        assert 0.55 <= time.monotonic() - started < 3.0  # two tries of 0.3 s, a short backoff
        started = time.monotonic()
        with pytest.raises(RemoteRetrievalError, match=r"^\S+ did not answer: ReadTimeout: .* of 0\.3 s$"):
            asyncio.run(retriever.model_copy(update={"max_attempts": 1}).ainvoke("anyone?"))
        assert time.monotonic() - started < 2.0


def test_a_full_backlog_is_a_connect_timeout() -> None:
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)  # never accepts: further connections hang
    port = listener.getsockname()[1]
    fillers = [socket.socket() for _ in range(3)]
    try:
        for filler in fillers:
            filler.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                filler.connect(("127.0.0.1", port))
        with RemoteRetriever(url=f"http://127.0.0.1:{port}/", timeout=0.3, max_attempts=1) as retriever:
            message = r"could not be reached: ConnectTimeout: no connection within the connect timeout of 0\.3 s$"
            with pytest.raises(RemoteRetrievalError, match=message):
                retriever.invoke("q")
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


def test_a_refused_connection_says_so() -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    where = rf"\(nothing listens on 127\.0\.0\.1:{port}\)"
    refused = rf"^{url} could not be reached: ConnectError: connection refused {where}$"
    with RemoteRetriever(url=url, max_attempts=1) as retriever:
        started = time.monotonic()
        with pytest.raises(RemoteRetrievalError, match=refused):
            retriever.invoke("q")
        with pytest.raises(RemoteRetrievalError, match=refused):
            asyncio.run(retriever.ainvoke("q"))
        assert time.monotonic() - started < 5.0
    with pytest.raises(RemoteRetrievalError, match=r"after 2 tries: ConnectError: connection refused"):
        RemoteRetriever(url=url, max_attempts=2, backoff=0.01).invoke("q")


def test_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="max_connections must be at least 1, got 0"):
        RemoteRetriever(url="http://127.0.0.1:1/", max_connections=0)
    with pytest.raises(ValueError, match="max_attempts must be at least 1, got 0"):
        RemoteRetriever(url="http://127.0.0.1:1/", max_attempts=0)
