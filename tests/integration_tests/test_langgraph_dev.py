"""``langgraph dev`` (LangGraph's in-memory API server) serving ``langgraph.json``'s two graphs.

The server is started by the test, without ``--allow-blocking``: LangGraph's server then fails a
run whose step blocks its event loop (a model loading on it, a file listed on it). The graphs are
the repository's own (``examples/langgraph_server.py``), on the real stack of the default preset:
BM25 over the demo corpus, the bundled reader, and the duplicate check by meaning (all-MiniLM-L6-v2,
loaded in round 2). The LLM is the test suite's rule-based one (``tests.fakes:three_round_llm``), so
that the question takes three rounds. The server is stopped by its process group.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"
# The command beside this interpreter (a virtual environment need not be on PATH).
LANGGRAPH = shutil.which("langgraph", path=str(Path(sys.executable).parent)) or shutil.which("langgraph")

pytestmark = [
    pytest.mark.integration,
    pytest.mark.enable_socket,
    pytest.mark.allow_hosts(["127.0.0.1"]),
    pytest.mark.skipif(
        LANGGRAPH is None or importlib.util.find_spec("langgraph_runtime_inmem") is None,
        reason="needs langgraph-cli[inmem] (the test group installs it)",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    port = _free_port()
    log = tmp_path_factory.mktemp("langgraph-dev") / "server.log"
    env = {
        **os.environ,
        "SEARCHAIN_MODEL": "import:tests.fakes:three_round_llm",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "LANGSMITH_TRACING": "false",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
    }
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"langgraph dev did not listen within 180 s:\n{log.read_text()[-4000:]}")
                time.sleep(0.5)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        text = log.read_text(errors="replace")
        assert "BlockingError" not in text, text[-4000:]


def _run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def test_a_three_round_question_under_the_default_preset(server: str) -> None:
    from langgraph_sdk import get_client

    async def ask() -> tuple[Any, Any]:
        client = get_client(url=server)
        assistants = await client.assistants.search(graph_id="searchain")
        thread = (await client.threads.create())["thread_id"]
        out = await client.runs.wait(thread, "searchain", input={"question": QUESTION})
        runs = await client.runs.list(thread)
        return assistants, (out, runs)

    assistants, (out, runs) = _run(ask())
    assert assistants and assistants[0]["graph_id"] == "searchain"
    assert [r["status"] for r in runs] == ["success"], runs
    assert out["rounds"] == 3, out.get("warnings")
    assert out["answer"] and out["tree"][0]["checks"]
    actions = [c["action"] for branch in out["tree"] for c in branch["checks"]]
    assert "correction" in actions and "completion" in actions


def test_the_review_clients_accept_path(server: str) -> None:
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from langgraph_review_client import review
    finally:
        sys.path.remove(str(ROOT / "examples"))

    out = _run(review(server, QUESTION, "accept"))
    assert out["answer"]
    decided = [c for branch in out["tree"] for c in branch["checks"] if c.get("review")]
    assert decided and all(c["review"]["decision"] == "accept" for c in decided), out["tree"]
