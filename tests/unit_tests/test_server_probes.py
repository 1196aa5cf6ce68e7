"""What an outside probe of ``searchain serve`` and ``searchain serve-index`` found, each as a test.

In process (Starlette's TestClient) where that is enough: bad JSON, bad headers, Host, Origin,
token, 404/405. A real uvicorn process on 127.0.0.1 (started by :func:`serve`, or the CLI itself)
for what only a socket shows: a ``Content-Length`` that promises more than comes, headers that
never end, and shutdown with event streams open. Every wait has a deadline, so a regression fails
instead of hanging.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

import httpx
from langgraph.checkpoint.memory import InMemorySaver
from starlette.testclient import TestClient

import searchain_graph.serve as serve_package
from searchain_graph import BM25Retriever, InvalidQuestionError, create_searchain_graph
from searchain_graph.cli.main import _build_parser
from searchain_graph.cli.serve import run_serve, run_serve_index, without_paths
from searchain_graph.serve import create_app
from searchain_graph.serve.app import last_event_id
from searchain_graph.serve.guard import check_token, host_name, served_hosts
from searchain_graph.serve.http import BadRequest, JSONReply, json_depth, parse_json
from searchain_graph.serve.index_server import create_index_app
from searchain_graph.serve.server import RedactTokens
from tests.fakes import PASSAGES, QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm
from tests.helpers import free_port, living_in_session, read_events

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "data" / "searchain_demo.jsonl"
LOCAL = "http://127.0.0.1"
TOKEN = "t0ken-for-the-probe-tests"
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def web_app(**options: Any) -> Any:
    graph = create_searchain_graph(
        tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5, checkpointer=InMemorySaver()
    )
    return create_app(graph, about="fakes", **options)


@pytest.fixture
def web() -> Iterator[TestClient]:
    with TestClient(web_app(), base_url=LOCAL) as client:
        yield client


@pytest.fixture
def index() -> Iterator[TestClient]:
    with TestClient(create_index_app(retriever()), base_url=LOCAL) as client:
        yield client


def message(reply: Any) -> str:
    """The error message of either protocol: ``{"error": "..."}`` or ``{"error": true, "message": "..."}``."""
    body = reply.json()
    return str(body["message"] if body["error"] is True else body["error"])


def runs_of(client: TestClient) -> dict[str, Any]:
    return client.app.state.runs._runs  # type: ignore[attr-defined,no-any-return]


# --- bad JSON: 400 naming the problem, never a 500 -------------------------------------------------

BAD_BODIES = [
    (b'{"question": 1e400, "query": "bus", "k": 1e400}', "out of range"),
    (b'{"question": -Infinity, "query": "bus", "k": -Infinity}', "-Infinity is not a JSON number"),
    (b'{"question": NaN, "query": "bus", "k": NaN}', "NaN is not a JSON number"),
    (b'{"question": 1' + b"0" * 5000 + b', "query": "bus", "k": 1' + b"0" * 5000 + b"}", "digits; the limit is"),
    (b'{"q": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", "more than 32 deep"),
    (b'{"q": ' + b'{"a":' * 10_000 + b"1" + b"}" * 10_000 + b"}", "more than 32 deep"),
    (b'{"question": "\\ud800 born?", "query": "\\ud800 bus"}', "lone surrogate (U+D800 at character 0)"),
    (b'{"question": "Where \\udfff", "query": "bus \\udfff"}', "lone surrogate (U+DFFF at character 6)"),
    (b'{"question": "caf\xe9"}', "not UTF-8 text (byte 17)"),
]


@pytest.mark.parametrize(("body", "problem"), BAD_BODIES)
def test_json_python_cannot_hold_is_a_400_on_both_servers(
    web: TestClient, index: TestClient, body: bytes, problem: str
) -> None:
    for client, path in ((web, "/runs"), (index, "/")):
        reply = client.post(path, content=body, headers={"content-type": "application/json"})
        assert reply.status_code == 400, (path, reply.text)
        assert problem in message(reply), (path, message(reply))
    assert runs_of(web) == {}


def test_the_json_limits_leave_good_input_alone() -> None:
    assert parse_json(b'{"a": [1, -2, 3.5e10, 1e-400], "b": "\\ud83d\\ude00"}') == {
        "a": [1, -2, 3.5e10, 0.0],
        "b": "\U0001f600",
    }  # an escaped surrogate *pair* is one character: accepted
    assert json_depth(b'{"a": "[[[[{{{{", "b": [[1], {"c": []}]}') == 4
    assert parse_json(b"[" * 32 + b"]" * 32) == json.loads("[" * 32 + "]" * 32)
    with pytest.raises(BadRequest, match="more than 32 deep"):
        parse_json(b"[" * 33 + b"]" * 33)


def test_a_question_with_an_escaped_emoji_runs_and_a_lone_surrogate_starts_nothing(web: TestClient) -> None:
    reply = web.post("/runs", content=b'{"question": "Where was \\ud83d\\ude00 born?"}')
    assert reply.status_code == 202
    assert read_events(web, reply.json()["events"])[-1]["event"] == "done"
    assert web.get(f"/runs/{reply.json()['run_id']}").json()["question"] == "Where was \U0001f600 born?"
    refused = web.post("/runs", content=b'{"question": "Where was \\ud800 born?"}')
    assert refused.status_code == 400 and "lone surrogate" in refused.json()["error"]
    assert len(runs_of(web)) == 1
    with pytest.raises(InvalidQuestionError, match="lone surrogate"):  # the manager checks too, for Python callers
        web.app.state.runs.start("Where \ud800?")  # type: ignore[attr-defined]


def test_k_must_be_a_whole_number_in_range(index: TestClient) -> None:
    for k in ("1e400", "-Infinity", "NaN", "9" * 5000, "٣", "²", " ", "3.0"):
        reply = index.get("/", params={"query": "bus", "k": k})
        assert reply.status_code == 400 and "'k' must be a whole number" in message(reply), k
        assert len(message(reply)) < 200
    for sent in (True, 2.0, "3", [3], {"k": 3}):
        reply = index.post("/", json={"query": "bus", "k": sent})
        assert reply.status_code == (200 if sent == "3" else 400), sent
    assert index.get("/", params={"query": "bus", "k": " 2 "}).json() == index.get("/?query=bus&k=2").json()


# --- headers -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["١٢", "²", "9" * 5000, "-1", "1e3", "0x10", "é"])
def test_a_last_event_id_that_is_not_an_event_id_is_a_400(web: TestClient, value: str) -> None:
    run = web.post("/runs", json={"question": QUESTION}).json()
    reply = web.get(run["events"], headers=[(b"last-event-id", value.encode("utf-8"))])
    assert reply.status_code == 400 and "Last-Event-ID must be the id of an event" in reply.json()["error"]
    assert last_event_id(None) == last_event_id(" ") == -1 and last_event_id("12") == 12


def test_head_is_a_get_not_a_post(index: TestClient) -> None:
    got = index.get("/", params={"query": "bus", "k": 2})
    head = index.head("/", params={"query": "bus", "k": 2})
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == got.headers["content-length"]
    assert index.head("/").status_code == 400  # no query: what a GET gets, not "send {...}" of a POST


def test_unknown_routes_and_methods_answer_in_the_protocols_json(web: TestClient, index: TestClient) -> None:
    reply = web.get("/nope")
    assert reply.status_code == 404 and reply.json() == {"error": "nothing is served at '/nope'"}
    reply = web.delete("/runs")
    assert reply.status_code == 405 and reply.json()["error"] == "DELETE is not allowed on '/runs'; use POST"
    assert reply.headers["allow"] == "POST"
    reply = index.put("/")
    assert reply.status_code == 405 and reply.json()["error"] is True and "PUT is not allowed" in message(reply)
    reply = index.get("/api/nope")
    assert reply.status_code == 404 and reply.json() == {"error": True, "message": "nothing is served at '/api/nope'"}


def test_an_unexpected_failure_is_a_json_500_that_names_no_detail(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken(BM25Retriever):
        def _get_relevant_documents(self, query: str, **kwargs: Any) -> Any:
            raise OSError("/secret/path/idx is gone")

    broken = Broken.from_documents(PASSAGES, k=1)
    with TestClient(create_index_app(broken), base_url=LOCAL) as client:
        reply = client.get("/", params={"query": "bus"})
    assert reply.status_code == 500 and reply.json() == {
        "error": True,
        "message": "the retriever failed (OSError); the server's log says more",
    }
    app = web_app()

    async def broken_get(run_id: str) -> None:
        raise ZeroDivisionError

    monkeypatch.setattr(app.state.runs, "aget", broken_get)
    with TestClient(app, base_url=LOCAL, raise_server_exceptions=False) as client:
        reply = client.get("/runs/x")
    assert reply.status_code == 500
    assert reply.json() == {"error": "the server failed (ZeroDivisionError); its log says more"}


def test_replies_survive_text_that_is_not_utf8_and_the_log_hides_tokens() -> None:
    assert JSONReply({"a": "x\ud800é"}).body == b'{"a":"x\\ud800\\u00e9"}'
    assert JSONReply({"a": "é"}).body == '{"a":"é"}'.encode()
    record = logging.LogRecord("uvicorn.access", 20, "", 0, "%s %s", ("GET", f"/r/x/events?token={TOKEN}&a=1"), None)
    assert RedactTokens().filter(record) and record.getMessage() == "GET /r/x/events?token=…&a=1"


# --- who may ask: Host, Origin, token ------------------------------------------------------------


@pytest.mark.parametrize("factory", [web_app, lambda: create_index_app(retriever())])
def test_a_host_this_server_does_not_answer_to_is_a_421(factory: Any) -> None:
    app = factory()
    for base in ("http://evil.example", "http://evil.example:8000", "http://127.0.0.1.nip.io:8000"):
        with TestClient(app, base_url=base) as client:
            reply = client.get("/healthz")
            assert reply.status_code == 421 and "does not answer to Host" in message(reply), base
    for base in ("http://localhost:8000", "http://127.0.0.1:1234", "http://[::1]:8000", "http://LOCALHOST."):
        with TestClient(app, base_url=base) as client:
            assert client.get("/healthz").status_code == 200, base


def test_the_hosts_a_bind_answers_to() -> None:
    assert served_hosts("127.0.0.1") == frozenset({"localhost", "127.0.0.1", "::1"})
    assert served_hosts("::1") == frozenset({"localhost", "127.0.0.1", "::1"})
    assert served_hosts("192.0.2.7") == frozenset({"192.0.2.7"})
    assert served_hosts("192.0.2.7", ["Search.Example."]) == frozenset({"192.0.2.7", "search.example"})
    assert served_hosts("::", ["box"]) == frozenset({"localhost", "127.0.0.1", "::1", "box"})
    assert served_hosts("192.0.2.7", ["*"]) is None
    assert [host_name(h) for h in ("A.b:80", "[::1]:8000", "x.", "[bad")] == ["a.b", "::1", "x", "[bad"]


def test_a_write_from_another_origin_is_a_403_and_starts_nothing(web: TestClient) -> None:
    plain = {"content-type": "text/plain"}  # what a page may send anywhere without a preflight
    body = json.dumps({"question": QUESTION})
    for headers in (
        {"origin": "http://evil.example", **plain},
        {"origin": "http://127.0.0.1:9999", **plain},
        {"origin": "null", **plain},
        {"sec-fetch-site": "cross-site", **plain},
    ):
        reply = web.post("/runs", content=body, headers=headers)
        assert reply.status_code == 403 and "another" in reply.json()["error"], headers
    assert runs_of(web) == {}
    assert web.post("/runs", content=body, headers={"origin": LOCAL}).status_code == 202  # the page's own
    assert web.post("/runs", content=body).status_code == 202  # curl, Python: no Origin
    assert web.get("/healthz", headers={"origin": "http://evil.example"}).status_code == 200  # reads pass


def test_with_a_token_every_request_carries_it_and_the_page_gets_it() -> None:
    with TestClient(web_app(token=TOKEN), base_url=LOCAL) as client:
        for path in ("/", "/healthz", "/runs/x", f"/?token={TOKEN}x"):
            reply = client.get(path)
            assert reply.status_code == 401 and "send the token" in reply.json()["error"], path
            assert reply.headers["www-authenticate"] == "Bearer"
        assert client.post("/runs", json={"question": QUESTION}).status_code == 401
        page = client.get(f"/?token={TOKEN}").text
        assert f'const TOKEN = "{TOKEN}";' in page and "new EventSource(withToken(" in page
        bearer = {"authorization": f"Bearer {TOKEN}"}
        run = client.post("/runs", json={"question": QUESTION}, headers=bearer).json()
        assert read_events(client, f"{run['events']}?token={TOKEN}")[-1]["event"] == "done"
        assert client.get(f"/runs/{run['run_id']}", headers=bearer).json()["status"] == "done"
    assert "const TOKEN = null;" in TestClient(web_app(), base_url=LOCAL).get("/").text
    for bad in ("short", "has spaces in it ok", "</script><script>x", "é" * 20):
        with pytest.raises(ValueError, match="16 to 256 characters"):
            check_token(bad)


def test_serve_beyond_loopback_always_has_a_token(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    apps: list[Any] = []
    monkeypatch.setattr(serve_package, "serve", lambda app, **options: apps.append(app))
    monkeypatch.delenv("SEARCHAIN_SERVE_TOKEN", raising=False)
    model = ["--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--corpus", str(DEMO)]
    assert run_serve(_build_parser().parse_args(["serve", *model, "--host", "192.0.2.7", "--quiet"])) == 0
    said = capsys.readouterr().err
    token = said.split("every request must carry it; set SEARCHAIN_SERVE_TOKEN to choose one): ")[1].split()[0]
    with TestClient(apps[-1], base_url="http://192.0.2.7:8000") as client:
        assert client.get("/").status_code == 401 and client.get(f"/?token={token}").status_code == 200
    monkeypatch.setenv("SEARCHAIN_SERVE_TOKEN", TOKEN)
    run_serve(_build_parser().parse_args(["serve", *model, "--quiet"]))
    with TestClient(apps[-1], base_url=LOCAL) as client:
        assert client.get("/healthz").status_code == 401
        assert client.get("/healthz", headers={"authorization": f"bearer {TOKEN}"}).status_code == 200


def test_what_the_servers_say_about_themselves_names_no_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "private" / "idx"
    BM25Retriever.from_documents(PASSAGES, k=1).save(directory)
    apps: list[Any] = []
    monkeypatch.setattr(serve_package, "serve", lambda app, **options: apps.append(app))
    run_serve_index(_build_parser().parse_args(["serve-index", str(directory), "--quiet"]))
    model = ["--model", "import:tests.fakes:serve_llm", "--reader", "llm"]
    run_serve(_build_parser().parse_args(["serve", "--index", str(directory), *model, "--quiet"]))
    for app in apps:
        with TestClient(app, base_url=LOCAL) as client:
            said = client.get("/healthz").text + client.get("/").text
        assert str(tmp_path) not in said and "private" not in said, said
    assert without_paths(f"LLM Qwen/Qwen2.5; index {directory}; reader ({directory}), at http://x/y") == (
        "LLM Qwen/Qwen2.5; index idx; reader (idx), at http://x/y"
    )


def test_too_many_waiting_runs_is_a_503() -> None:
    release = threading.Event()
    scripted = tree_llm()

    def held(messages: Any) -> str:
        release.wait(20)
        return scripted.respond(messages)  # type: ignore[no-any-return]

    graph = create_searchain_graph(RuleChatModel(respond=held), retriever(), ScriptedReader(TREE_READS))
    with TestClient(create_app(graph, max_waiting=1), base_url=LOCAL) as client:
        first = client.post("/runs", json={"question": QUESTION}).json()
        deadline = time.monotonic() + 10
        while client.get(f"/runs/{first['run_id']}").json()["status"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert client.post("/runs", json={"question": QUESTION}).status_code == 202  # waits its turn
        refused = client.post("/runs", json={"question": QUESTION})
        assert refused.status_code == 503 and refused.json()["error"] == "1 runs are waiting already; try again later"
        assert refused.headers["retry-after"] == "5"
        release.set()
        assert read_events(client, first["events"])[-1]["event"] == "done"


# --- a real server process ---------------------------------------------------------------------

SERVER = """
import sys
from langgraph.checkpoint.memory import InMemorySaver
from searchain_graph import create_searchain_graph
from searchain_graph.serve import ServerLimits, create_app, serve
from searchain_graph.serve.index_server import create_index_app
from searchain_graph.serve.server import RedactTokens
from tests.fakes import TREE_READS, ScriptedReader, retriever, tree_llm

kind, port = sys.argv[1], int(sys.argv[2])
if kind == "index":
    app = create_index_app(retriever(), body_timeout_s=1.0)
else:
    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), checkpointer=InMemorySaver())
    app = create_app(graph, body_timeout_s=1.0)
limits = ServerLimits(header_timeout_s=1.0, keep_alive_s=1.0, shutdown_grace_s=1.0)
serve(app, port=port, log_level="warning", limits=limits)
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def _start(command: list[str], port: int) -> subprocess.Popen[str]:
    process = subprocess.Popen(command, cwd=ROOT, env=_env(), start_new_session=True, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            pytest.fail(f"the server did not start: {process.communicate()[1]}")
        time.sleep(0.1)


def _stop(process: subprocess.Popen[str], within: float) -> float:
    """SIGTERM ``process``; the seconds it took to exit (fails past ``within``); then no process of its session left."""
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(within)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        pytest.fail(f"the server did not stop within {within} s of SIGTERM")
    took = time.monotonic() - started
    if Path("/proc/self/stat").is_file():
        deadline = time.monotonic() + 5
        while living_in_session(process.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert living_in_session(process.pid) == [], "a process of the server outlived it"
    return took


@pytest.fixture(params=["index", "web"])
def server(request: pytest.FixtureRequest) -> Iterator[tuple[str, int]]:
    """A real server process, ``serve()`` with 1 s limits, of the index app or the web app: ``(kind, port)``."""
    port = free_port()
    process = _start([sys.executable, "-c", SERVER, request.param, str(port)], port)
    try:
        yield request.param, port
    finally:
        if process.poll() is None:
            _stop(process, within=10)


def _exchange(port: int, data: bytes, within: float) -> tuple[bytes, float]:
    """Send ``data`` on a new connection; what comes back until the server closes it, and when it closed."""
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=within) as sock:
        sock.sendall(data)
        received = b""
        while chunk := sock.recv(65536):  # a timeout (the server kept it open) raises and fails the test
            received += chunk
    return received, time.monotonic() - started


def test_a_content_length_larger_than_the_body_is_a_408_in_time(server: tuple[str, int]) -> None:
    kind, port = server
    path = b"/" if kind == "index" else b"/runs"
    request = b"POST " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\n" + b'{"query": "bus"'
    reply, took = _exchange(port, request, within=8)
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ") and b"connection: close" in head.lower(), reply
    assert (
        "did not arrive within 1 s (15 bytes came, 100 promised)"
        in json.loads(body)["message" if kind == "index" else "error"]
    )
    assert took < 6


def test_headers_that_never_end_and_idle_connections_are_closed_in_time(server: tuple[str, int]) -> None:
    _, port = server
    _, took = _exchange(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: a", within=8)
    assert took < 6
    _, took = _exchange(port, b"", within=8)  # connects and says nothing
    assert took < 6
    reply, took = _exchange(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", within=8)
    assert reply.startswith(b"HTTP/1.1 200 ") and took < 6  # keep-alive, then closed when idle
    reply, _ = _exchange(port, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + b"a" * 20_000, within=8)
    assert reply.startswith(b"HTTP/1.1 400 ")  # over the header limit


def test_sigterm_with_event_streams_open_stops_in_time_and_cancels_the_queue() -> None:
    """The CLI itself, a rule-based LLM taking 30 ms a call, one run at a time, 80 queued."""
    port = free_port()
    command = [sys.executable, "-m", "searchain_graph", "serve", "--model", "import:tests.fakes:slow_serve_llm"]
    command += ["--reader", "llm", "--corpus", str(DEMO), "--port", str(port), "--quiet", "--shutdown-grace", "1"]
    process = _start(command, port)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as client:
            runs = [client.post("/runs", json={"question": f"{QUESTION} {n}"}).json() for n in range(80)]
        streams: dict[int, list[str]] = {0: [], 79: []}

        def follow(n: int) -> None:
            with httpx.stream("GET", base + runs[n]["events"], timeout=30) as reply:
                streams[n].extend(line for line in reply.iter_lines() if line.startswith("event: "))

        followers = [threading.Thread(target=follow, args=(n,), daemon=True) for n in streams]
        for thread in followers:
            thread.start()
        time.sleep(0.3)
    except BaseException:
        os.killpg(process.pid, signal.SIGKILL)
        raise
    took = _stop(process, within=15)
    for thread in followers:
        thread.join(5)
        assert not thread.is_alive(), "an event stream outlived the server"
    assert took < 8, took
    assert streams[79][-1] == "event: failed"  # the last queued run was cancelled, not waited for
    assert streams[0][-1] in ("event: done", "event: failed")
