"""``RemoteRetriever``'s connections: one pooled client reused, clear errors, event loops, copies, no leaks.

The servers are real and on 127.0.0.1: a small ColBERTv2-protocol app under uvicorn that notes
the client port of each request (one port per connection), a socket server that accepts and
never answers, one whose backlog is full (connections time out), and a port nothing listens on.
Every test fails on a ``ResourceWarning`` (an unclosed socket or transport), collected with
``gc.collect()`` before it ends.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import gc
import gzip
import pickle
import re
import socket
import threading
import time
import warnings
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from langchain_core.documents import Document
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from searchain_graph.ir.remote import MAX_REPLY_BYTES, RemoteRetrievalError, RemoteRetriever
from tests.helpers import free_port, served

pytestmark = [
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),  # loopback only
    pytest.mark.filterwarnings("error::ResourceWarning", "error::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.fixture(autouse=True)
def no_resource_warnings() -> Iterator[None]:
    """Fail on any ResourceWarning raised during the test, including by objects collected at its end.

    What tests of other modules left behind (they run in random order, unguarded) is collected
    before the window opens, so a leak is charged to the test that made it.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
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
        message = rf"^{url} did not answer: ReadTimeout: no whole reply within the timeout of 0\.3 s$"
        with pytest.raises(RemoteRetrievalError, match=message):
            retriever.invoke("anyone?")  # the first try takes the whole timeout: no time is left for a second
        assert 0.25 <= time.monotonic() - started < 2.0
        started = time.monotonic()
        message = r"^\S+ did not answer: (ReadTimeout|TimeoutError): no whole reply within the timeout of 0\.3 s$"
        with pytest.raises(RemoteRetrievalError, match=message):
            asyncio.run(retriever.ainvoke("anyone?"))
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
            message = r"could not be reached: ConnectTimeout: no connection within the timeout of 0\.3 s$"
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


# Replies that are not the protocol, too big, too slow, cut off: a socket server writes them byte for byte.

PASSWORD = "secret"
REPLY = b'{"query": "q", "topk": [{"text": "Echo | q", "pid": 1, "rank": 1, "score": 1.0}]}'


def head(status: str = "200 OK", length: int | None = None, **fields: str) -> bytes:
    """The status line and headers of a reply (``content_type="text/html"`` -> ``Content-Type: text/html``)."""
    lines = [f"HTTP/1.1 {status}"] + [f"{name.replace('_', '-').title()}: {value}" for name, value in fields.items()]
    lines += [f"Content-Length: {length}"] if length is not None else []
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def whole(body: bytes, **fields: str) -> Callable[[socket.socket, threading.Event], None]:
    """An answer sending ``body`` (JSON unless told) at once."""
    fields.setdefault("content_type", "application/json")

    def answer(connection: socket.socket, done: threading.Event) -> None:
        connection.sendall(head(length=len(body), **fields) + body)

    return answer


@contextlib.contextmanager
def raw_server(
    answer: Callable[[socket.socket, threading.Event], None], seen: list[bytes] | None = None
) -> Iterator[str]:
    """A socket server on 127.0.0.1: for each request it reads, ``answer(connection, done)`` writes the reply.

    Its URL names a user and the password :data:`PASSWORD`. ``done`` is set when the test is over
    (an answer that trickles stops then); the connection is closed after each answer. The
    requests go to ``seen``.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.05)
    done = threading.Event()
    threads: list[threading.Thread] = []

    def serve(connection: socket.socket) -> None:
        with connection:
            try:
                request = b""
                while b"\r\n\r\n" not in request and not done.is_set():
                    with contextlib.suppress(TimeoutError):
                        request += connection.recv(65536) or b"\r\n\r\n"
                if seen is not None:
                    seen.append(request)
                answer(connection, done)
                connection.shutdown(socket.SHUT_RDWR)
            except OSError:  # the client went away (it stopped reading)
                pass

    def accept() -> None:
        while not done.is_set():
            with contextlib.suppress(TimeoutError):
                connection = listener.accept()[0]
                connection.settimeout(0.05)
                threads.append(threading.Thread(target=serve, args=(connection,), daemon=True))
                threads[-1].start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield f"http://user:{PASSWORD}@127.0.0.1:{listener.getsockname()[1]}/"
    finally:
        done.set()
        acceptor.join(5)
        for thread in threads:
            thread.join(5)
        listener.close()


def failure(retriever: RemoteRetriever, asynchronous: bool) -> str:
    """The message of the :class:`RemoteRetrievalError` a query raises (sync or async)."""
    with pytest.raises(RemoteRetrievalError) as caught:
        if asynchronous:
            asyncio.run(retriever.ainvoke("q"))
        else:
            retriever.invoke("q")
    return str(caught.value)


def shown(url: str) -> str:
    return url.replace(f":{PASSWORD}@", ":…@")


def trickle(data: bytes, every: float = 0.1) -> Callable[[socket.socket, threading.Event], None]:
    """An answer sending ``data`` one byte every ``every`` seconds (until the client goes or the test ends)."""

    def answer(connection: socket.socket, done: threading.Event) -> None:
        for byte in data:
            if done.wait(every):
                return
            connection.sendall(bytes([byte]))

    return answer


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_reply_is_bounded_once_inflated(asynchronous: bool) -> None:
    bomb = gzip.compress(b"[" + b" " * 10_000_000 + b"]")  # 10 MB of JSON in 10 kB
    assert len(bomb) < 20_000

    def endless(connection: socket.socket, done: threading.Event) -> None:
        connection.sendall(head(length=10**9, content_type="application/json") + b"[")
        while not done.is_set():
            connection.sendall(b" " * 65536)  # raises once the client has closed the connection

    for answer in (whole(bomb, content_encoding="gzip"), endless):
        with raw_server(answer) as url, RemoteRetriever(url=url, max_reply_bytes=100_000, timeout=20) as retriever:
            message = failure(retriever, asynchronous)
            assert message == f"{shown(url)} answered more than the limit of 100,000 bytes (max_reply_bytes)"
    # within the bound, compressed replies are read (gzip, deflate with and without its zlib wrapper)
    deflated = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    encoded = {"gzip": gzip.compress(REPLY), "deflate": zlib.compress(REPLY)}
    for encoding, body in [*encoded.items(), ("deflate", deflated.compress(REPLY) + deflated.flush())]:
        with raw_server(whole(body, content_encoding=encoding)) as url, RemoteRetriever(url=url) as retriever:
            docs = asyncio.run(retriever.ainvoke("q")) if asynchronous else retriever.invoke("q")
            assert echoed(docs, "q"), encoding
    with raw_server(whole(b"{}", content_encoding="br")) as url, RemoteRetriever(url=url) as retriever:
        assert "answered in an encoding not asked for: Content-Encoding br" in failure(retriever, asynchronous)
    assert RemoteRetriever(url="http://127.0.0.1:1/").max_reply_bytes == MAX_REPLY_BYTES


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_timeout_bounds_the_whole_query(asynchronous: bool) -> None:
    # the reply a byte every 0.1 s: each read is quick, the reply takes 8 s; then its headers so
    slow_body = trickle(REPLY)
    reply = head(length=len(REPLY), content_type="application/json") + REPLY

    def slow_head(connection: socket.socket, done: threading.Event) -> None:
        connection.sendall(reply[:17])  # the status line
        trickle(reply[17:])(connection, done)

    def sent_head_first(connection: socket.socket, done: threading.Event) -> None:
        connection.sendall(head(length=len(REPLY), content_type="application/json"))
        slow_body(connection, done)

    for answer in (sent_head_first, slow_head):
        with raw_server(answer) as url, RemoteRetriever(url=url, timeout=1.0) as retriever:
            started = time.monotonic()
            message = failure(retriever, asynchronous)
            assert time.monotonic() - started < 3.0, message
            assert message.startswith(f"{shown(url)} did not answer: ") and "within the timeout of 1 s" in message
    # retries and their pauses count too: five tries would take 3 to 6 s of backoff

    def unavailable(connection: socket.socket, done: threading.Event) -> None:
        connection.sendall(head("503 Service Unavailable", length=4) + b"busy")

    with (
        raw_server(unavailable) as url,
        RemoteRetriever(url=url, timeout=1.0, max_attempts=5, backoff=0.4) as retriever,
    ):
        started = time.monotonic()
        message = failure(retriever, asynchronous)
        assert time.monotonic() - started < 1.5, message
        # two or three whole tries; on a loaded machine the last may start and run out of the time
        ran_out = "; the next try got no whole reply within the timeout of 1 s"
        assert re.fullmatch(
            rf"{re.escape(shown(url))} answered HTTP 503( after [23] tries: busy| after 2 tries: busy{ran_out}"
            rf"|: busy{ran_out})",
            message,
        ), message


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_retry_that_runs_out_of_time_names_the_servers_answer(asynchronous: bool) -> None:
    tries = []

    def busy_then_slow(connection: socket.socket, done: threading.Event) -> None:
        tries.append(len(tries) + 1)
        if len(tries) == 1:
            connection.sendall(head("503 Service Unavailable", length=4) + b"busy")
        else:
            trickle(head(length=len(REPLY), content_type="application/json") + REPLY)(connection, done)

    with raw_server(busy_then_slow) as url, RemoteRetriever(url=url, timeout=1.0, backoff=0.05) as retriever:
        message = failure(retriever, asynchronous)
    assert tries == [1, 2]
    assert message == (
        f"{shown(url)} answered HTTP 503: busy; the next try got no whole reply within the timeout of 1 s"
    )


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_reply_nested_too_deep_raises_naming_the_url(asynchronous: bool) -> None:
    nested = whole(b'{"query": "q", "topk": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    with raw_server(nested) as url, RemoteRetriever(url=url) as retriever:
        assert failure(retriever, asynchronous) == f"{shown(url)} answered JSON nested too deeply to read"


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_reply_that_is_not_the_protocol_raises_naming_the_url(asynchronous: bool) -> None:
    def cut_off(connection: socket.socket, done: threading.Event) -> None:
        connection.sendall(head(length=len(REPLY), content_type="application/json") + REPLY[:10])

    cases = [
        (whole(b"<html><body>Sign in</body></html>", content_type="text/html"), "did not answer JSON (a text/html"),
        (whole(b"[1, 2]"), "did not answer a JSON object (got list)"),
        (whole(b'{"query": "\xff\xfe", "topk": []}'), "did not answer JSON (a application/json reply): 'utf-8'"),
        (cut_off, "broke off or garbled its reply after 2 tries: RemoteProtocolError: "),
        (whole(b'{"error": true, "message": "no index"}'), "answered an error: no index"),
    ]
    for answer, expected in cases:
        with raw_server(answer) as url, RemoteRetriever(url=url, max_attempts=2, backoff=0.01) as retriever:
            message = failure(retriever, asynchronous)
            assert message.startswith(f"{shown(url)} ") and expected in message, message


def test_the_index_urls_password_is_shown_nowhere(capsys: pytest.CaptureFixture[str]) -> None:
    def failing(connection: socket.socket, done: threading.Event) -> None:
        connection.sendall(head("500 Internal Server Error", length=4) + b"oops")

    requests: list[bytes] = []
    with raw_server(failing, requests) as url:
        retriever = RemoteRetriever(url=url, max_attempts=1)
        assert retriever.shown_url == shown(url) and PASSWORD not in shown(url)
        messages = [failure(retriever, False), failure(retriever, True), repr(retriever), str(retriever)]
        assert messages[0] == f"{shown(url)} answered HTTP 500: oops" and shown(url) in messages[2]
        assert all(PASSWORD not in message for message in messages), messages
    credentials = base64.b64encode(f"user:{PASSWORD}".encode())  # the password is sent, as basic auth
    assert len(requests) == 2 and all(b"\r\nAuthorization: Basic " + credentials in r for r in requests)
    messages = [failure(retriever, False), failure(retriever, True)]  # nothing listens there now
    assert all("connection refused" in message and PASSWORD not in message for message in messages), messages
    for bad in (url.replace("http", "ftp"), url.replace("127.0.0.1:", "127.0.0.1:port")):
        with pytest.raises(ValueError) as caught:
            RemoteRetriever(url=bad)
        assert PASSWORD not in str(caught.value) and "user:…@" in str(caught.value), caught.value

    # what searchain serve shows (its startup line, /healthz and the page show `about`) and ask says
    from searchain_graph.cli.commands import build_graph
    from searchain_graph.cli.main import _build_parser

    args = ["serve", "--index", url, "--model", "import:tests.fakes:serve_llm", "--reader", "llm"]
    said: list[str] = []
    _, about = build_graph(_build_parser().parse_args(args), said.append)
    assert f"index {shown(url)};" in about and said[0].startswith(f"opened the index at {shown(url)} in ")
    assert PASSWORD not in about + " ".join(said) + capsys.readouterr().err
