"""PostgreSQL replicas that outlive their connections: a cut claims connection, idle sessions ended by
the server, a quick restart of the server.

* Two replicas in process, each with its own store, checkpointer and LLM (paced, recording when each
  call starts and ends): the claims connection of the replica running a run is terminated mid-run.
  That replica stops the run (no LLM call after the cut), the other adopts it once the claim's grace
  has passed and finishes it; their calls never overlap.
* A run paused for review on one replica and decided through the other: the decision is answered at
  once (and refused, 409, through the first meanwhile), and the run's next LLM call waits the
  claim's grace.
* A real ``searchain serve`` on a database whose sessions end after one idle second: a run after an
  idle pause is accepted and finishes.
* Runs in flight while the server restarts (``pg_ctl restart -m fast``), on two replicas in process
  (three runs each) and on two real ones: every run ends ``done``.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import subprocess
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("langgraph.checkpoint.postgres")

from langchain_core.messages import BaseMessage

from searchain_graph import create_searchain_graph
from searchain_graph.serve.db import open_checkpointer, open_run_store
from searchain_graph.serve.postgres import PostgresRunStore, fence_checkpoints
from searchain_graph.serve.runs import RunManager
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm
from tests.helpers import free_port, kill_session, post_run, serve_events, start_serve, wait_healthy

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

PACE_S = 0.3
"""How long each LLM call of the in-process replicas takes."""
SERVE_QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"


def _recording_llm(name: str, calls: list[dict[str, Any]]) -> RuleChatModel:
    """:func:`tree_llm`, each call taking :data:`PACE_S` and recorded in ``calls`` (replica, start, end)."""
    rules = tree_llm().respond

    def respond(messages: Sequence[BaseMessage]) -> str:
        call: dict[str, Any] = {"replica": name, "start": time.monotonic(), "end": None}
        calls.append(call)
        time.sleep(PACE_S)
        call["end"] = time.monotonic()
        reply: str = rules(messages)
        return reply

    return RuleChatModel(respond=respond)


@contextlib.asynccontextmanager
async def _replicas(
    url: str, names: list[str], calls: list[dict[str, Any]], max_concurrent: int = 1, review: bool = False
) -> AsyncIterator[list[RunManager]]:
    """A replica per name on ``url``: a run manager with its own store, checkpointer and recording LLM.

    The checkpointer is fenced by the store's claims, as ``searchain serve`` fences it.
    """
    async with contextlib.AsyncExitStack() as stack:  # each replica closed in turn: its runs, saver, store
        managers = []
        for name in names:
            store = open_run_store(url)
            stack.callback(store.close)
            saver, close = await open_checkpointer(url)
            stack.push_async_callback(close)
            fence_checkpoints(saver, store.holds)
            llm = _recording_llm(name, calls)
            reader = ScriptedReader(TREE_READS)
            graph = create_searchain_graph(
                llm, retriever(), reader, confidence_threshold=1.5, review=review, checkpointer=saver
            )
            managers.append(RunManager(graph, store=store, max_concurrent=max_concurrent))
            stack.push_async_callback(managers[-1].close)
        yield managers


async def _until(done: Any, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not await done():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


def test_a_replica_whose_claims_connection_is_cut_stops_before_another_resumes_its_run(postgres_url: str) -> None:
    import psycopg

    calls: list[dict[str, Any]] = []

    async def scenario() -> tuple[float, Any, list[dict[str, Any]]]:
        async with _replicas(postgres_url, ["a", "b"], calls) as (a, b):
            run = await a.astart(QUESTION)

            async def second_call() -> bool:
                return len(calls) >= 2

            await _until(second_call, 30, "replica a never made its second LLM call")
            pid = a.store._claims_conn.info.backend_pid  # type: ignore[attr-defined]
            with psycopg.connect(postgres_url, autocommit=True) as admin:
                # Waits (up to 5 s) for the backend to end: its advisory locks are free from here on.
                assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,)).fetchone() == (True,)
                cut = time.monotonic()
            adopting = asyncio.create_task(b.adopt_every(0.2))
            try:

                async def finished() -> bool:
                    stored = await b.aget(run.id)
                    return stored is not None and stored.status in ("done", "error")

                await _until(finished, 45, "the run never finished")
            finally:
                adopting.cancel()
                await asyncio.gather(adopting, return_exceptions=True)
            assert run.task is not None
            await asyncio.wait_for(asyncio.gather(run.task, return_exceptions=True), 10)  # a stopped it
            stored = await b.aget(run.id)
            return cut, stored, stored.events if stored is not None else []

    cut, stored, events = asyncio.run(scenario())
    assert stored.status == "done" and stored.output["answer"] == "Toronto Coach Terminal", stored
    assert [e["id"] for e in events] == list(range(len(events)))  # none lost, none written twice
    assert sum(e["event"] == "done" for e in events) == 1
    after = [c for c in calls if c["start"] > cut]
    assert after and {c["replica"] for c in after} == {"b"}, calls  # one replica's calls after the cut
    first_b = min(c["start"] for c in calls if c["replica"] == "b")
    assert all(c["end"] is not None and c["end"] <= first_b for c in calls if c["replica"] == "a"), calls
    assert any("resumed from its last checkpoint" in str(e["data"].get("progress")) for e in events)


def test_a_decision_taken_through_another_replica_resumes_the_run_after_the_claims_grace(postgres_url: str) -> None:
    """A run paused for review on one replica, decided through the other: answered at once, its first LLM call
    after the claim's grace (a replica that lost that claim while resuming the run has stopped by then)."""
    from searchain_graph.serve.http import BadRequest

    calls: list[dict[str, Any]] = []

    async def scenario() -> tuple[float, float, Any, int]:
        async with _replicas(postgres_url, ["a", "b"], calls, review=True) as (a, b):
            run = await a.astart(QUESTION)
            assert run.task is not None
            await asyncio.wait_for(run.task, 30)
            assert run.status == "review" and run.review is not None, run.events[-1]
            remote = await b.aget(run.id)
            assert remote is not None
            decision = {"decision": "accept", "id": remote.review["id"]}  # type: ignore[index]
            asked = time.monotonic()
            resumed = await b.decide(remote, decision)
            answered = time.monotonic() - asked
            refused = 0
            try:  # the same decision through the first replica meanwhile: b holds the thread
                await a.decide(await a.aget(run.id), decision)  # type: ignore[arg-type]
            except BadRequest as exc:
                refused = exc.status
            assert resumed.task is not None
            await asyncio.wait_for(resumed.task, 30)
            first_b = min(c["start"] for c in calls if c["replica"] == "b")
            return answered, first_b - asked, await b.aget(run.id), refused

    answered, first_call, ended, refused = asyncio.run(scenario())
    assert answered < 2 and refused == 409, (answered, refused)
    assert first_call >= PostgresRunStore.claim_grace_s, first_call
    assert ended.status in ("review", "done"), ended.status
    assert [e["id"] for e in ended.events] == list(range(len(ended.events)))


def test_runs_in_flight_when_the_database_restarts_resume_and_end_done(postgres_url: str) -> None:
    """Two replicas in process, three runs in flight on each, and the server restarted (``pg_ctl restart -m
    fast``, under a second): every run is resumed from its checkpoint and ends ``done``, its events whole."""
    calls: list[dict[str, Any]] = []

    async def scenario() -> tuple[float, list[Any]]:
        async with _replicas(postgres_url, ["a", "b"], calls, max_concurrent=3) as managers:
            runs = [await m.astart(f"{QUESTION} ({i})") for m in managers for i in range(3)]

            async def all_calling() -> bool:
                return len(calls) >= len(runs)

            await _until(all_calling, 30, "the runs never started")
            took = await asyncio.to_thread(_restart_server)
            adopting = [asyncio.create_task(m.adopt_every(0.5)) for m in managers]
            try:

                async def all_finished() -> bool:
                    with contextlib.suppress(Exception):  # the store connecting again
                        got = [await managers[0].aget(r.id) for r in runs]
                        return all(g is not None and g.status in ("done", "error") for g in got)
                    return False

                await _until(all_finished, 50, "the runs never finished")
            finally:
                for task in adopting:
                    task.cancel()
                await asyncio.gather(*adopting, return_exceptions=True)
            return took, [await managers[1].aget(r.id) for r in runs]

    took, ended = asyncio.run(scenario())
    assert took < 5, took
    for run in ended:
        assert run.status == "done" and run.output["answer"] == "Toronto Coach Terminal", (run.status, run.error)
        assert [e["id"] for e in run.events] == list(range(len(run.events)))
        assert [e["event"] for e in run.events].count("done") == 1


def _admin(url: str) -> Any:
    import psycopg

    return psycopg.connect(url, autocommit=True)


def _status(port: int, run_id: str) -> str:
    import httpx

    status: str = httpx.get(f"http://127.0.0.1:{port}/runs/{run_id}", timeout=10).json()["status"]
    return status


def test_connections_the_server_ends_when_idle_are_replaced(postgres_url: str, tmp_path: Path) -> None:
    """Every session of the replica ends after an idle second: the next question is taken and answered."""
    import httpx

    name = postgres_url.rpartition("/")[2]
    with _admin(postgres_url) as admin:
        admin.execute(f"ALTER DATABASE \"{name}\" SET idle_session_timeout = '1s'")
    port, log = free_port(), tmp_path / "serve.log"
    process = start_serve(postgres_url, port, log)
    try:
        for i in range(2):
            time.sleep(2.5)  # the replica's sessions idle past the timeout: the server ends them
            began = time.monotonic()
            run_id = post_run(port, f"{SERVE_QUESTION} ({i})")
            events = serve_events(port, run_id)
            assert events[-1]["event"] == "done", (events[-1], log.read_text(errors="replace")[-3000:])
            assert time.monotonic() - began < 20, log.read_text(errors="replace")[-3000:]  # no pool time-out waited
        assert httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10).status_code == 200
    finally:
        kill_session(process)


def _restart_server() -> float:
    """Restart the test server (``pg_ctl restart -m fast``, as ``.ci/postgres`` runs it); the seconds it took."""
    data = os.environ.get("PGDIR_CI", "")
    bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    if not data or not bins:
        message = "restarting the server needs $PGDIR_CI and Debian's pg_ctl (.ci/postgres start)"
        if os.environ.get("SEARCHAIN_REQUIRE_POSTGRES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    command = [bins[-1], "-D", f"{data}/data", "-l", f"{data}/server.log", "-m", "fast", "-w", "-t", "60", "restart"]
    if os.geteuid() == 0:
        command = ["runuser", "-u", "postgres", "--", *command]
    elif os.environ.get("USER") != "postgres":
        command = ["sudo", "-n", "runuser", "-u", "postgres", "--", *command]
    began = time.monotonic()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)
    return time.monotonic() - began


def test_two_served_replicas_resume_their_runs_after_a_restart_of_the_database(
    postgres_url: str, tmp_path: Path
) -> None:
    ports = [free_port(), free_port()]
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    processes = [start_serve(postgres_url, port, log, wait=False) for port, log in zip(ports, logs, strict=True)]
    try:
        for process, port, log in zip(processes, ports, logs, strict=True):
            wait_healthy(process, port, log=log)
        started = [(port, post_run(port, f"{SERVE_QUESTION} ({i})")) for i, port in enumerate(ports * 2)]
        deadline = time.monotonic() + 30
        while sum(_status(port, rid) == "running" for port, rid in started) < 2:
            assert time.monotonic() < deadline, "the runs never started"
            time.sleep(0.05)
        took = _restart_server()
        assert took < 10, took
        deadline = time.monotonic() + 90
        statuses: dict[str, str] = {}
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):  # a replica still reconnecting
                statuses = {rid: _status(ports[0], rid) for _, rid in started}
            if statuses and all(s in ("done", "error") for s in statuses.values()):
                break
            time.sleep(0.5)
        tails = [log.read_text(errors="replace")[-3000:] for log in logs]
        assert statuses and all(s == "done" for s in statuses.values()), (statuses, tails)
        for _, rid in started:
            events = serve_events(ports[1], rid)
            assert [int(e["id"]) for e in events] == list(range(len(events))), events
            assert events[-1]["event"] == "done" and [e["event"] for e in events].count("done") == 1, events
    finally:
        for process in processes:
            kill_session(process)


def test_a_call_the_claim_check_refuses_is_not_made_and_not_logged_as_a_callback_error(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the claims connection is cut, the run's LLM calls are refused, from the event loop (``ainvoke``) and
    from a thread (``invoke``, as a reader's model calls it); LangChain logs no callback error for the refusal."""
    import psycopg

    from searchain_graph.serve.recovery import ClaimCheck
    from searchain_graph.serve.store import ClaimLostError

    calls: list[dict[str, Any]] = []
    llm = _recording_llm("a", calls)
    store = PostgresRunStore(postgres_url)
    try:
        assert store.claim("thread-1")
        config: Any = {"callbacks": [ClaimCheck(store, "thread-1")]}
        asyncio.run(llm.ainvoke("Where was Kevin Drew born?", config=config))
        assert len(calls) == 1  # held: the call is made
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            pid = store._claims_conn.info.backend_pid
            assert admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,)).fetchone() == (True,)
        caplog.clear()
        with caplog.at_level("WARNING"):
            with pytest.raises(ClaimLostError):
                asyncio.run(llm.ainvoke("Where was Kevin Drew born?", config=config))

            async def in_a_thread() -> None:
                await asyncio.to_thread(llm.invoke, "Where was Kevin Drew born?", config=config)

            with pytest.raises(ClaimLostError):
                asyncio.run(in_a_thread())
        assert len(calls) == 1, calls  # neither refused call was made
        assert "Error in ClaimCheck" not in caplog.text and "Error in callback" not in caplog.text, caplog.text
        assert "claims connection" in caplog.text  # what the store says of the cut is still logged
    finally:
        store.close()
