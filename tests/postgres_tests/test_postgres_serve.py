"""Two real ``searchain serve --db postgresql://...`` processes on one database.

A run started through one replica is followed through the other to its end; then replicas are
SIGKILLed mid-run ten times (each restarted at once, while the other one serves the next run):
every run completes, from its checkpoint or its question, or is marked failed with the reason,
and none is lost. The stack is BM25 over the demo corpus, the LLM reading (a restart is quick), with
the paced rule LLM of :func:`tests.fakes.paced_serve_llm` (0.4 s a call: a run lasts seconds).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.helpers import (
    assert_runs_end,
    free_port,
    kill_mid_run,
    kill_session,
    post_run,
    serve_events,
    start_serve,
    wait_healthy,
)

pytest.importorskip("starlette")
pytest.importorskip("psycopg")
httpx = pytest.importorskip("httpx")

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"
KILLS = 10


def test_two_replicas_share_their_runs_and_lose_none_over_ten_kills(postgres_url: str, tmp_path: Path) -> None:
    ports = [free_port(), free_port()]
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    processes = [start_serve(postgres_url, port, log, wait=False) for port, log in zip(ports, logs, strict=True)]
    rng = random.Random(37)
    started: list[str] = []
    try:
        for process, port, log in zip(processes, ports, logs, strict=True):
            wait_healthy(process, port, log=log)
        # Started through A, followed through B (which never ran it) to the end.
        first = post_run(ports[0], QUESTION)
        followed = serve_events(ports[1], first)
        assert followed[-1]["event"] == "done", followed[-1]
        assert followed == serve_events(ports[0], first)  # the same events, whichever replica is asked
        # Ten kills, each of the replica that took the newest run; it restarts while the other serves.
        for i in range(KILLS):
            k = i % 2
            wait_healthy(processes[k], ports[k], log=logs[k])
            started.append(post_run(ports[k], f"{QUESTION} ({i})"))
            kill_mid_run(processes[k], ports[k], started[-1], rng)
            processes[k] = start_serve(postgres_url, ports[k], logs[k], wait=False)
        for process, port, log in zip(processes, ports, logs, strict=True):
            wait_healthy(process, port, log=log)
        assert_runs_end(ports[1], ports[0], started, within=180)  # listed by one replica, shown by the other
        notes = []
        for rid in started:
            events = serve_events(ports[0], rid)
            assert [int(e["id"]) for e in events] == list(range(len(events)))  # none lost, none twice
            assert [e["event"] for e in events].count("done") <= 1 and events[-1]["event"] in ("done", "failed")
            notes += [e["data"].get("progress") or "" for e in events if e["event"] == "update"]
        # Each kill caught a run in flight; it was taken up again (by the restarted replica or the other).
        assert sum("after a restart" in n or n == "restarted from its question" for n in notes) >= 1
    finally:
        for process in processes:
            kill_session(process)
