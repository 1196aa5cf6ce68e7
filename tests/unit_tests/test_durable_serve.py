"""``searchain serve --db``, SIGKILLed mid-run ten times: after each restart every run completes
or is marked failed with the reason, and none is lost (SQLite with one process).

The real command (BM25 over the demo corpus; the LLM reads, so that a restart is quick) and a rule
LLM that takes 0.4 s a call (:func:`tests.fakes.paced_serve_llm`), so that a run lasts a few
seconds; each kill lands at a seeded random moment of the newest run, once it runs.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.helpers import assert_runs_end, free_port, kill_mid_run, kill_session, post_run, serve_events, start_serve

pytest.importorskip("starlette")
pytest.importorskip("langgraph.checkpoint.sqlite")
httpx = pytest.importorskip("httpx")

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]  # loopback only

QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"
KILLS = 10


def test_runs_survive_ten_kills_of_the_server(tmp_path: Path) -> None:
    db, port, log = tmp_path / "serve.db", free_port(), tmp_path / "serve.log"
    rng = random.Random(37)
    started: list[str] = []
    process = start_serve(db, port, log)
    try:
        for i in range(KILLS):
            started.append(post_run(port, f"{QUESTION} ({i})"))
            kill_mid_run(process, port, started[-1], rng)
            process = start_serve(db, port, log)
        assert_runs_end(port, port, started, within=120)
        notes = [
            event["data"].get("progress")
            for rid in started
            for event in serve_events(port, rid)
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
