"""``searchain serve --db``: runs, events and checkpoints in SQLite outlive the process.

In process: a restarted app lists past runs with their events and trees; a run in flight when
the process stopped (its task cancelled with nothing more written, as a kill leaves it) resumes
from its last checkpoint and does not redo the rounds before it; the store writes each change in
its own transaction. ``test_durable_serve.py`` kills real server processes.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import BaseMessage
from starlette.testclient import TestClient

from searchain_graph import create_searchain_graph
from searchain_graph.serve import create_app
from searchain_graph.serve.db import open_run_store
from searchain_graph.serve.runs import RunManager
from searchain_graph.serve.sqlite_store import SqliteRunStore, open_sqlite_checkpointer
from searchain_graph.serve.store import StoredRun, StoreOpenError
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm
from tests.helpers import assert_prune_keeps_the_newest_finished, assert_run_ends_are_whole, read_events

LOCAL = "http://127.0.0.1"


def _graph(llm: Any = None) -> Any:
    return create_searchain_graph(llm or tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)


def test_a_restarted_server_lists_its_past_runs_and_redraws_their_trees(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    with TestClient(create_app(_graph(), db=db), base_url=LOCAL) as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        before = read_events(client, run["events"])
        assert before[-1]["event"] == "done"
    with TestClient(create_app(_graph(), db=db), base_url=LOCAL) as client:
        listed = client.get("/runs").json()["runs"]
        assert [(r["run_id"], r["status"], r["answer"]) for r in listed] == [
            (run["run_id"], "done", "Toronto Coach Terminal")
        ]
        assert read_events(client, run["events"]) == before  # the same events, replayed
        assert client.get(f"/runs/{run['run_id']}").json()["output"]["answer"] == "Toronto Coach Terminal"
        assert 'data-verdict="correction"' in client.get(f"/runs/{run['run_id']}/tree").text


class _Stalls:
    """An LLM that stalls on its ``stall_at``-th call until released: the moment to "kill" the server."""

    def __init__(self, stall_at: int) -> None:
        self.calls: list[str] = []
        self.stall_at = stall_at
        self.stalled = threading.Event()
        self.release = threading.Event()
        inner = tree_llm().respond

        def respond(messages: Sequence[BaseMessage]) -> str:
            self.calls.append(str(messages[-1].content)[:60])
            if len(self.calls) == self.stall_at:
                self.stalled.set()
                self.release.wait(10)
            reply: str = inner(messages)
            return reply

        self.model = RuleChatModel(respond=respond)


async def _manager(db: Path, llm: Any) -> tuple[RunManager, Any]:
    saver = await open_sqlite_checkpointer(db)
    return RunManager(_graph(llm).copy(update={"checkpointer": saver}), store=SqliteRunStore(db)), saver


def test_a_run_in_flight_resumes_from_its_last_checkpoint_after_a_restart(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    first = _Stalls(stall_at=2)  # round 2's chain: round 1 is checkpointed by then

    async def crash() -> str:
        manager, saver = await _manager(db, first.model)
        run = manager.start(QUESTION)
        while not first.stalled.is_set():
            await asyncio.sleep(0.01)
        assert run.task is not None
        run.task.cancel()  # as a kill: nothing more reaches the store
        await asyncio.gather(run.task, return_exceptions=True)
        first.release.set()
        await saver.conn.close()
        manager.store.close()
        return run.id

    run_id = asyncio.run(crash())
    stored = {r.id: r for r in SqliteRunStore(db).load(10)}
    assert stored[run_id].status == "running"  # in flight, as a killed process leaves it

    second = _Stalls(stall_at=0)

    async def restart() -> Any:
        manager, saver = await _manager(db, second.model)
        recovered = await manager.restore()
        assert [r.id for r in recovered] == [run_id]
        run = manager.get(run_id)
        assert run is not None and run.task is not None
        await run.task
        await saver.conn.close()
        manager.store.close()
        return run

    run = asyncio.run(restart())
    assert run.status == "done" and run.output is not None and run.output["answer"] == "Toronto Coach Terminal"
    assert len(run.output["tree"]) == 3
    # Round 1 was not asked again: the resumed run began with round 2's prompt.
    assert first.calls[0].startswith("Construct a global reasoning chain")
    assert second.calls[0].startswith("According to the Reference")  # round 2's correction prompt
    assert not any(c.startswith("Construct a global reasoning chain") for c in second.calls)
    progress = [e["data"].get("progress") for e in run.events]
    assert "resumed from its last checkpoint after a restart" in progress
    again = {r.id: r for r in SqliteRunStore(db).load(10)}[run_id]
    assert again.status == "done" and [e["id"] for e in again.events] == list(range(len(again.events)))


def test_a_run_with_no_checkpoint_starts_again_and_one_that_cannot_be_read_fails_with_the_reason(
    tmp_path: Path,
) -> None:
    db = tmp_path / "serve.db"
    store = SqliteRunStore(db)
    store.save(StoredRun("r1", QUESTION, "thread-r1", time.time(), "queued"))
    store.close()

    async def restart(graph: Any) -> Any:
        manager = RunManager(graph, store=SqliteRunStore(db))
        await manager.restore()
        run = manager.get("r1")
        assert run is not None
        if run.task is not None:
            await run.task
        manager.store.close()
        return run

    class Unreadable:
        checkpointer = object()

        async def aget_state(self, config: Any) -> Any:
            raise sqlite3.DatabaseError("file is not a database")

    failed = asyncio.run(restart(Unreadable()))
    assert failed.status == "error" and "could not be read: DatabaseError: file is not a database" in failed.error
    store = SqliteRunStore(db)
    store.save(StoredRun("r1", QUESTION, "thread-r1", time.time(), "queued"))
    store.close()
    again = asyncio.run(restart(_graph()))  # no checkpointer, no checkpoint: from the question
    assert again.status == "done" and again.output["answer"] == "Toronto Coach Terminal"
    assert "restarted from its question" in [e["data"].get("progress") for e in again.events]


def test_the_store_keeps_what_it_was_given_and_refuses_what_it_cannot_open(tmp_path: Path) -> None:
    store = SqliteRunStore(tmp_path / "runs.db")
    run = StoredRun("a", "Q?", "t", 1.0, "running", error="a lone \ud800 surrogate")
    store.save(run)
    assert store.load(1)[0].error == "a lone \\ud800 surrogate"  # kept as its escape, not refused
    store.append("a", {"id": 0, "event": "update", "data": {"html": "x" * 1_000_000, "odd": "\udcff"}})
    store.append("a", {"id": 0, "event": "update", "data": {"html": "a second write of event 0"}})  # kept once
    run.status, run.output = "done", {"answer": "A", "deep": [[[[1e308]]]]}
    store.save(run)
    loaded = store.load(5)
    assert len(loaded) == 1 and loaded[0].status == "done" and loaded[0].output == run.output
    assert loaded[0].events[0]["data"]["html"] == "x" * 1_000_000 and loaded[0].events[0]["data"]["odd"] == "\udcff"
    assert len(loaded[0].events) == 1
    store.delete("a")
    assert store.load(5) == []
    store.close()
    (tmp_path / "junk.db").write_bytes(b"not a database at all" * 100)
    with pytest.raises(StoreOpenError, match="junk.db: not a SQLite database, or a damaged one"):
        SqliteRunStore(tmp_path / "junk.db")
    with pytest.raises(ValueError, match=r"'mysql://me:…@db/x': a SQLite file path or a postgresql:// URL"):
        open_run_store("mysql://me:secret@db/x")  # the password is never shown


def test_a_runs_end_is_stored_with_its_last_event_or_not_at_all(tmp_path: Path) -> None:
    store = SqliteRunStore(tmp_path / "runs.db")
    refuse = (
        "CREATE TRIGGER refuse BEFORE INSERT ON searchain_run_events WHEN NEW.event = 'done' "
        "BEGIN SELECT RAISE(ABORT, 'refused'); END"
    )
    try:
        assert_run_ends_are_whole(store, lambda: store._run(refuse, write=True))
    finally:
        store.close()


def test_the_store_forgets_the_oldest_finished_runs_only(tmp_path: Path) -> None:
    store = SqliteRunStore(tmp_path / "runs.db")
    try:
        assert_prune_keeps_the_newest_finished(store)
    finally:
        store.close()
