"""``searchain serve --db postgresql://...`` in process: the store, the claims across connections, and
two run managers on one database (one starts a run, the other follows it; an orphaned run is
adopted by exactly one of them). The real servers are in ``test_postgres_serve.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("psycopg")
pytest.importorskip("langgraph.checkpoint.postgres")

from searchain_graph import create_searchain_graph
from searchain_graph.serve.db import open_checkpointer, open_run_store
from searchain_graph.serve.postgres import PostgresRunStore
from searchain_graph.serve.runs import RunManager
from searchain_graph.serve.store import StoredRun, StoreOpenError
from tests.fakes import QUESTION, TREE_READS, ScriptedReader, retriever, tree_llm
from tests.helpers import assert_prune_keeps_the_newest_finished, assert_run_ends_are_whole

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def _graph() -> Any:
    return create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)


@contextlib.asynccontextmanager
async def _replicas(url: str, n: int, keep: int = 100) -> AsyncIterator[list[RunManager]]:
    """``n`` run managers on the database ``url``, each with its own store and checkpointer, as ``n`` replicas."""
    managers, closers = [], []
    try:
        for _ in range(n):
            saver, close = await open_checkpointer(url)
            closers.append(close)
            graph = _graph().copy(update={"checkpointer": saver})
            managers.append(RunManager(graph, store=open_run_store(url), keep=keep))
        yield managers
    finally:
        for manager in managers:
            await manager.close()
            manager.store.close()
        for close in closers:
            await close()


def test_the_store_keeps_hard_text_and_claims_hold_across_connections(postgres_url: str) -> None:
    first, second = PostgresRunStore(postgres_url), PostgresRunStore(postgres_url)
    try:
        odd = "a NUL \x00, a lone \ud800, " + "é" * 1_000_000
        first.save(StoredRun("r1", odd, "t1", 1.5, "running", error="e\x00"))
        first.append("r1", {"id": 0, "event": "update", "data": {"html": "x\x00\udcff", "n": 10**30}})
        first.append("r1", {"id": 0, "event": "update", "data": {"html": "a second write of event 0"}})
        got = second.get("r1")  # written by one connection, read by another
        assert got is not None and got.question.startswith("a NUL \\x00, a lone \\ud800, ")
        assert len(got.question) > 1_000_000 and got.error == "e\\x00"
        assert got.events == [{"id": 0, "event": "update", "data": {"html": "x\x00\udcff", "n": 10**30}}]
        assert [r.id for r in second.in_flight()] == ["r1"]
        assert second.events_after("r1", 0) == []
        # One thread, one claim: across processes (connections), and within one.
        assert first.claim("t1") and not first.claim("t1") and not second.claim("t1")
        first.release("t1")
        assert second.claim("t1") and not first.claim("t1")
        second.close()  # as a killed replica: the server gives its claims up with its connection
        deadline = time.monotonic() + 10  # once its backend has seen the connection end
        while not first.claim("t1"):
            assert time.monotonic() < deadline, "the claim of a closed connection was never released"
            time.sleep(0.05)
        first.delete("r1")
        assert first.get("r1") is None and first.rows(5) == []
    finally:
        first.close()
        second.close()


def test_a_bad_url_is_refused_with_a_reason_that_hides_the_password(postgres_url: str) -> None:
    port = postgres_url.split("@127.0.0.1:")[1].split("/")[0]
    with pytest.raises(StoreOpenError, match=r"'postgresql://nobody:…@127\.0\.0\.1:.*cannot connect"):
        open_run_store(f"postgresql://nobody:hunter2@127.0.0.1:{port}/no_such_database")


def test_a_run_started_by_one_replica_is_followed_through_another(postgres_url: str) -> None:
    async def scenario() -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        async with _replicas(postgres_url, 2) as (a, b):
            run = await a.astart(QUESTION)
            remote = await b.aget(run.id)  # b never started it: it reads it from the database
            assert remote is not None and remote.question == QUESTION
            followed = [e async for e in b.events(remote)]
            assert run.task is not None
            await run.task
            return followed, run.events, await b.listing()

    followed, local, listed = asyncio.run(scenario())
    assert followed[-1]["event"] == "done" and followed[-1]["data"]["answer"] == "Toronto Coach Terminal"
    assert [e["id"] for e in followed] == list(range(len(local)))
    assert [e["event"] for e in followed] == [e["event"] for e in local]
    assert [(r["status"], r["answer"]) for r in listed] == [("done", "Toronto Coach Terminal")]


def test_an_orphaned_run_is_adopted_by_exactly_one_replica(postgres_url: str) -> None:
    store = PostgresRunStore(postgres_url)
    store.save(StoredRun("orphan", QUESTION, "thread-orphan", time.time(), "running"))  # its server died
    store.close()

    async def scenario() -> tuple[list[list[str]], Any]:
        async with _replicas(postgres_url, 3) as managers:
            taken = await asyncio.gather(*(m.adopt() for m in managers))
            runs = [r for group in taken for r in group]
            assert len(runs) == 1 and runs[0].task is not None
            await runs[0].task
            again = await asyncio.gather(*(m.adopt() for m in managers))  # finished: nobody takes it
            return [[r.id for r in group] for group in taken + again], await managers[1].aget("orphan")

    ids, run = asyncio.run(scenario())
    assert sorted(i for group in ids for i in group) == ["orphan"]
    assert run.status == "done" and run.output["answer"] == "Toronto Coach Terminal"
    progress = [e["data"].get("progress") for e in run.events]
    assert "restarted from its question" in progress  # no checkpoint was written before it died


def test_followers_are_told_of_each_write_and_survive_a_lost_listener(postgres_url: str) -> None:
    """A follower on one store gets the events another store writes through NOTIFY alone (its fallback
    read is set to a minute, longer than the test may take), also after its listening connection is cut."""
    import psycopg

    from searchain_graph.serve.run import follow_store

    writer, reader = PostgresRunStore(postgres_url), PostgresRunStore(postgres_url)

    async def follow(got: list[int]) -> None:
        async for event in follow_store(reader, "r1", -1, lambda: False, poll=60.0):
            got.append(int(event["id"]))

    async def scenario() -> list[int]:
        writer.save(StoredRun("r1", "q", "t1", 1.0, "running"))
        got: list[int] = []
        task = asyncio.create_task(follow(got))
        for n in range(3):
            await asyncio.to_thread(writer.append, "r1", {"id": n, "event": "update", "data": {"n": n}})
            await _until(lambda n=n: len(got) == n + 1)
        with psycopg.connect(postgres_url, autocommit=True) as admin:  # cut the reader's listening connection
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query = 'LISTEN searchain_runs'"
            )
        await asyncio.sleep(0.1)
        await asyncio.to_thread(writer.append, "r1", {"id": 3, "event": "update", "data": {"n": 3}})
        await _until(lambda: len(got) == 4)
        await asyncio.to_thread(writer.append, "r1", {"id": 4, "event": "done", "data": {}})
        writer.save(StoredRun("r1", "q", "t1", 1.0, "done"))
        await asyncio.wait_for(task, 30)  # the row's end is announced too: the stream closes
        return got

    try:
        assert asyncio.run(scenario()) == [0, 1, 2, 3, 4]
    finally:
        writer.close()
        reader.close()


async def _until(done: Any, seconds: float = 30.0) -> None:
    """Wait for ``done()``: far less than the follower's one-minute fallback read when NOTIFY works."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "the follower was not told of the write"
        await asyncio.sleep(0.01)


def test_a_runs_end_is_stored_with_its_last_event_or_not_at_all(postgres_url: str) -> None:
    store = PostgresRunStore(postgres_url)
    refuse = (
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "IF NEW.event = 'done' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$",
        "CREATE TRIGGER refuse BEFORE INSERT ON searchain_run_events FOR EACH ROW EXECUTE FUNCTION refuse()",
    )
    try:
        assert_run_ends_are_whole(store, lambda: [store._run(sql, write=True) for sql in refuse])
    finally:
        store.close()


def test_the_store_forgets_the_oldest_finished_runs_only(postgres_url: str) -> None:
    store = PostgresRunStore(postgres_url)
    try:
        assert_prune_keeps_the_newest_finished(store)
    finally:
        store.close()


def test_a_replica_prunes_the_runs_of_every_replica_with_their_checkpoints(postgres_url: str) -> None:
    async def scenario() -> tuple[list[str], list[Any], list[str]]:
        async with _replicas(postgres_url, 2, keep=1) as (a, b):
            old = await a.astart(QUESTION)
            assert old.task is not None
            await old.task
            a.closing = True  # as a replica gone: it prunes nothing more itself
            new = await b.astart(QUESTION)
            assert new.task is not None
            await new.task
            for _ in range(100):  # b's pruning runs in the background
                if [r["run_id"] for r in await b.listing()] == [new.id]:
                    break
                await asyncio.sleep(0.05)
            await asyncio.gather(*b._dropping)
            config: Any = {"configurable": {"thread_id": old.thread_id, "checkpoint_ns": ""}}
            checkpoints = [await b.graph.checkpointer.aget_tuple(config)]  # type: ignore[union-attr]
            return [r["run_id"] for r in await b.listing()], checkpoints, [new.id]

    listed, checkpoints, newest = asyncio.run(scenario())
    assert listed == newest and checkpoints == [None]
