"""``searchain serve --db``, SIGKILLed mid-run ten times: after each restart every run completes
or is marked failed with the reason, and none is lost (issue 37, SQLite with one process).

The real command with the real stack (BM25 over the demo corpus, the bundled reader) and a rule
LLM that takes 0.4 s a call (:func:`tests.fakes.paced_serve_llm`), so that a run lasts a few
seconds; each kill lands at a seeded random moment of the newest run.
"""

from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import free_port, kill_session, read_events, start_serve

pytest.importorskip("starlette")
pytest.importorskip("langgraph.checkpoint.sqlite")
httpx = pytest.importorskip("httpx")

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]  # loopback only

ROOT = Path(__file__).resolve().parents[2]
DEMO_CORPUS = ROOT / "examples" / "data" / "searchain_demo.jsonl"
QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"
KILLS = 10


def test_runs_survive_ten_kills_of_the_server(tmp_path: Path) -> None:
    db, port, log = tmp_path / "serve.db", free_port(), tmp_path / "serve.log"
    rng = random.Random(37)
    started: list[str] = []
    process = start_serve(db, port, log)
    try:
        for i in range(KILLS):
            reply = httpx.post(f"http://127.0.0.1:{port}/runs", json={"question": f"{QUESTION} ({i})"}, timeout=10)
            assert reply.status_code == 202, reply.text
            started.append(reply.json()["run_id"])
            time.sleep(rng.uniform(0.2, 1.6))  # a run lasts about 3 s: the kill lands in it
            kill_session(process)
            process = start_serve(db, port, log)
        deadline = time.monotonic() + 120
        runs: dict[str, Any] = {}
        while time.monotonic() < deadline:
            runs = {r["run_id"]: r for r in httpx.get(f"http://127.0.0.1:{port}/runs", timeout=10).json()["runs"]}
            if all(runs.get(rid, {}).get("status") in ("done", "error") for rid in started):
                break
            time.sleep(0.5)
        assert set(started) <= set(runs), "a run was lost"
        for rid in started:
            run = httpx.get(f"http://127.0.0.1:{port}/runs/{rid}", timeout=10).json()
            assert run["status"] in ("done", "error"), run
            if run["status"] == "error":
                assert run["error"], run
            else:
                assert run["answer"] and run["output"]["final_content"]
        notes = [
            event["data"].get("progress")
            for rid in started
            for event in _events(port, rid)
            if event["event"] == "update"
        ]
        # Each kill caught its newest run in flight; the restart took it up again.
        assert (
            sum(n is not None and "after a restart" in n for n in notes)
            + sum(n == "restarted from its question" for n in notes)
            >= 1
        )
    finally:
        kill_session(process)


def _events(port: int, run_id: str) -> list[dict[str, Any]]:
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
        return read_events(client, f"/runs/{run_id}/events")
