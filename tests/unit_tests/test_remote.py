"""One index shared over HTTP: ``searchain serve-index`` and ``RemoteRetriever``, checked against the local retriever.

The server is real (uvicorn on 127.0.0.1); the clients are :class:`RemoteRetriever` (sync,
async, GET and POST) and DSPy's own ``dspy.ColBERTv2``.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from langchain_core.documents import Document
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from searchain_graph import BM25Retriever, create_searchain_graph, load_index
from searchain_graph.evaluation.harness import read_records
from searchain_graph.ir.remote import RemoteRetrievalError, RemoteRetriever
from searchain_graph.serve.index_server import MAX_QUERY_CHARS, create_index_app
from tests.fakes import PASSAGES, QUESTION, TREE_READS, ScriptedReader, tree_llm
from tests.helpers import FLOAT_TOLERANCE, served

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]  # loopback only
QUERIES = ["Where was Kevin Drew born?", "Spirit If... debut album", "greyhound buses Toronto", "Quebec city"]
MORE = [
    Document(page_content=f"Passage {n} about buses, albums and cities number {n}.", metadata={"id": f"m{n}"})
    for n in range(40)
]


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("shared") / "idx"
    BM25Retriever.from_documents([*PASSAGES, *MORE], k=1).save(directory)
    return directory


@pytest.fixture(scope="module")
def url(index_dir: Path) -> Iterator[str]:
    with served(create_index_app(load_index(index_dir), about="test", max_concurrent=2)) as base:
        yield base


def same(remote: list[Document], local: list[Document]) -> None:
    assert [d.page_content for d in remote] == [d.page_content for d in local]
    for got, want in zip(remote, local, strict=True):
        assert got.metadata["score"] == pytest.approx(want.metadata["score"], **FLOAT_TOLERANCE)
        for key in ("id", "title", "pid"):
            assert got.metadata.get(key) == want.metadata.get(key), key


@pytest.mark.parametrize("post", [False, True])
def test_remote_results_equal_the_local_retrievers(url: str, index_dir: Path, post: bool) -> None:
    local = load_index(index_dir)
    remote = RemoteRetriever(url=url, k=3, post=post)
    for query in QUERIES:
        same(remote.invoke(query), local.invoke(query, k=3))
        same(remote.invoke(query, k=1), local.invoke(query, k=1))
    api = RemoteRetriever(url=url + "api/search", k=5)
    same(api.invoke(QUERIES[0]), local.invoke(QUERIES[0], k=5))


def test_async_and_concurrent_queries(url: str, index_dir: Path) -> None:
    local = load_index(index_dir)
    remote = RemoteRetriever(url=url, k=2)

    async def main() -> list[list[Document]]:
        return await asyncio.gather(*(remote.ainvoke(QUERIES[n % 4]) for n in range(40)))

    for n, docs in enumerate(asyncio.run(main())):  # 40 at once through a server running 2 at a time
        same(docs, local.invoke(QUERIES[n % 4], k=2))


def test_the_protocol_as_dspy_reads_it(url: str, index_dir: Path) -> None:
    query = "Kevin Drew born, buses"
    reply = httpx.get(url, params={"query": query, "k": 3}).json()
    assert reply["query"] == query and [hit["rank"] for hit in reply["topk"]] == [1, 2, 3]
    top = reply["topk"][0]
    assert top["text"] == "Kevin Drew | " + PASSAGES[1].page_content
    assert top["title"] == "Kevin Drew" and top["id"] == "p2" and isinstance(top["pid"], int)
    assert sum(hit["prob"] for hit in reply["topk"]) == pytest.approx(1.0)
    assert top["prob"] >= reply["topk"][1]["prob"]
    dspy = pytest.importorskip("dspy")
    hits = dspy.ColBERTv2(url=url)(query, k=3)
    assert [h["long_text"] for h in hits] == [hit["text"] for hit in reply["topk"]]
    assert [h["pid"] for h in hits] == [hit["pid"] for hit in reply["topk"]]
    posted = dspy.ColBERTv2(url=url, post_requests=True)(query, k=3)
    assert [h["text"] for h in posted] == [hit["text"] for hit in reply["topk"]]


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({}, 400, "non-empty 'query'"),
        ({"query": "  "}, 400, "non-empty 'query'"),
        ({"query": "x" * (MAX_QUERY_CHARS + 1)}, 400, f"the limit is {MAX_QUERY_CHARS}"),
        ({"query": "bus", "k": "0"}, 400, "'k' must be a whole number from 1 to 100"),
        ({"query": "bus", "k": "101"}, 400, "got '101'"),
        ({"query": "bus", "k": "two"}, 400, "got 'two'"),
    ],
)
def test_bad_requests_are_refused_by_name(url: str, params: dict[str, str], status: int, message: str) -> None:
    response = httpx.get(url, params=params)
    assert response.status_code == status
    assert response.json()["error"] is True and message in response.json()["message"]


def test_bodies_are_bounded_and_must_be_json(url: str) -> None:
    huge = httpx.post(url, content=b'{"query": "' + b"a" * 70_000 + b'"}')
    assert huge.status_code == 413 and "the limit is 65536" in huge.json()["message"]
    assert httpx.post(url, content=b"{not json").status_code == 400
    assert httpx.post(url, json=["a list"]).status_code == 400
    assert httpx.post(url, json={"query": "bus", "k": 2.5}).status_code == 400
    assert httpx.get(url, params={"query": "bus"}).status_code == 200
    health = httpx.get(url + "healthz").json()
    assert health["ok"] is True and health["about"] == "test" and health["queries"] > 0


def test_client_errors_name_the_url_and_the_cause(url: str) -> None:
    with pytest.raises(RemoteRetrievalError, match=r"answered HTTP 400: .*limit is 2000"):
        RemoteRetriever(url=url, max_attempts=3).invoke("x" * 2001)  # not retried: a 4xx will not pass
    with pytest.raises(ValueError, match="url must start with http"):
        RemoteRetriever(url="localhost:1234")
    with pytest.raises(ValueError, match="k must be between 1 and 100"):
        RemoteRetriever(url=url).invoke("bus", k=500)


def flaky_app(failures: int, reply: Any, status: int = 503) -> tuple[Starlette, dict[str, int]]:
    """A server failing its first ``failures`` requests with ``status``, then answering ``reply``."""
    hits = {"n": 0}

    async def answer(request: Request) -> Response:
        hits["n"] += 1
        if hits["n"] <= failures:
            return JSONResponse({"error": True, "message": "overloaded"}, status_code=status)
        return JSONResponse(reply)

    return Starlette(routes=[Route("/", answer)]), hits


def test_transient_failures_are_retried_then_reported() -> None:
    good = {"query": "q", "topk": [{"text": "Toronto | A city.", "pid": 7, "rank": 1, "score": 2.0}]}
    app, hits = flaky_app(2, good)
    with served(app) as base:
        docs = RemoteRetriever(url=base, backoff=0.01).invoke("q")
        assert hits["n"] == 3 and docs[0].page_content == "A city."
        assert docs[0].metadata == {"title": "Toronto", "pid": 7, "id": "7", "rank": 1, "score": 2.0}
        hits["n"] = 0
        docs = asyncio.run(RemoteRetriever(url=base, backoff=0.01).ainvoke("q"))
        assert hits["n"] == 3 and docs[0].metadata["title"] == "Toronto"
    app, hits = flaky_app(10, good)
    with served(app) as base, pytest.raises(RemoteRetrievalError, match="answered HTTP 503 after 3 tries"):
        RemoteRetriever(url=base, backoff=0.01).invoke("q")
    assert hits["n"] == 3
    with served(flaky_app(0, {"results": []})[0]) as base, pytest.raises(RemoteRetrievalError, match="'topk'"):
        RemoteRetriever(url=base).invoke("q")
    with served(flaky_app(0, {"error": True, "message": "no index"})[0]) as base:
        with pytest.raises(RemoteRetrievalError, match="answered an error: no index"):
            RemoteRetriever(url=base).invoke("q")
    started = time.monotonic()
    with pytest.raises(RemoteRetrievalError, match=r"could not be reached after 3 tries: ConnectError"):
        RemoteRetriever(url="http://127.0.0.1:9/", backoff=0.01).invoke("q")  # nothing listens on port 9
    assert time.monotonic() - started < 10


def test_the_graph_runs_on_a_shared_index(url: str, index_dir: Path) -> None:
    outs = [
        create_searchain_graph(tree_llm(), retriever, ScriptedReader(TREE_READS), confidence_threshold=1.5).invoke(
            {"question": QUESTION}
        )
        for retriever in (load_index(index_dir), load_index(url))
    ]
    assert isinstance(load_index(url), RemoteRetriever)
    assert outs[0]["answer"] == outs[1]["answer"] and outs[0]["rounds"] == outs[1]["rounds"] == 3
    assert [r["document"]["page_content"] for r in outs[0]["references"]] == [
        r["document"]["page_content"] for r in outs[1]["references"]
    ]


def test_cli_serve_index_shared_by_eval_workers(index_dir: Path, tmp_path: Path) -> None:
    from searchain_graph.cli import main

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "searchain_graph", "serve-index", str(index_dir), "--port", str(port), "--quiet"]
    server = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                health = httpx.get(base + "healthz").json()
                break
            except httpx.TransportError:
                assert server.poll() is None and time.monotonic() < deadline, (
                    server.stderr.read() if server.stderr else ""
                )
                time.sleep(0.1)
        assert "bm25 index" in health["about"] and "44 passages" in health["about"]
        data = tmp_path / "hotpot.jsonl"
        contexts = [{"title": d.metadata["title"], "paragraph_text": d.page_content} for d in PASSAGES]
        row = {"question_id": "s1", "question_text": QUESTION, "answers_objects": [{"spans": ["Toronto"]}]}
        row["contexts"] = contexts  # not used for retrieval: --index names the served index
        data.write_text(json.dumps(row) + "\n")
        out = tmp_path / "shared.jsonl"
        args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "searchain,direct_retrieval"]
        args += ["--index", base, "--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--out", str(out)]
        assert main([*args, "--quiet"]) == 0
        records = read_records(out)
        assert [r["error"] for r in records] == [None, None] and {r["retriever"] for r in records} == {
            "RemoteRetriever"
        }
        assert {r["llm_backend"] for r in records} == {None}  # not a local model: no backend to name
        assert httpx.get(base + "healthz").json()["queries"] >= 2
    finally:
        server.terminate()
        server.wait(10)
        if server.stderr:
            server.stderr.close()
