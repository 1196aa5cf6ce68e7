"""PostgreSQL faults: start-up errors in one line, a database that is down or read-only answered with 503."""

from __future__ import annotations

import time
from typing import Any

import pytest

from searchain_graph import create_searchain_graph
from searchain_graph.serve.postgres import PostgresRunStore
from searchain_graph.serve.store import StoredRun, StoreOpenError, StoreWriteError
from tests.fakes import QUESTION, TREE_READS, ScriptedReader, retriever, tree_llm

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]


def _admin(url: str) -> Any:
    import psycopg

    conn = psycopg.connect(url, autocommit=True)
    conn.execute("SET default_transaction_read_only = off")  # an admin writes, whatever the database says
    return conn


def _row(run_id: str) -> StoredRun:
    return StoredRun(run_id, QUESTION, f"thread-{run_id}", time.time(), "queued")


def test_start_up_errors_are_one_line_naming_the_cause(postgres_url: str) -> None:
    base, _, name = postgres_url.rpartition("/")
    with pytest.raises(StoreOpenError, match=r"cannot connect.*no_such_db"):
        PostgresRunStore(f"{base}/no_such_db")
    with _admin(postgres_url) as admin:  # a login that may not create tables (PostgreSQL 15's default)
        admin.execute(f"CREATE ROLE reader_{name[-12:]} LOGIN")
    reader = f"{base.replace('postgres@', f'reader_{name[-12:]}@')}/{name}"
    with pytest.raises(StoreOpenError, match=r"cannot set up the runs' tables: permission denied"):
        PostgresRunStore(reader)
    with _admin(postgres_url) as admin:  # an older layout
        admin.execute("CREATE TABLE searchain_runs (id TEXT PRIMARY KEY, question TEXT NOT NULL)")
    with pytest.raises(StoreOpenError, match=r"searchain_runs is of another layout \(no column created, error"):
        PostgresRunStore(postgres_url)
    with _admin(postgres_url) as admin:
        admin.execute(f"DROP ROLE reader_{name[-12:]}")


def test_a_read_only_database_refuses_writes_and_health_says_so(postgres_url: str) -> None:
    import psycopg

    store = PostgresRunStore(postgres_url)
    try:
        store.save(_row("a"))
        assert store.health() is None
        name = postgres_url.rpartition("/")[2]
        with _admin(postgres_url) as admin:
            admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')
            admin.execute(  # the store's sessions end: it connects again, read-only
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
                (name,),
            )
        with pytest.raises(StoreWriteError, match=r"refuses writes \(it is read-only") as refused:
            store.save(_row("b"))
        assert store.refusal(refused.value) == str(refused.value)  # lasting: a run fails on it
        with psycopg.connect(postgres_url, autocommit=True) as other, pytest.raises(psycopg.Error) as raw:
            other.execute("CREATE TABLE t (x int)")  # as the checkpointer's own write is refused
        assert (store.refusal(raw.value) or "").startswith("the database refuses writes (it is read-only: ")
        assert store.refusal(StoreWriteError("the connection broke", interrupted=True)) is None  # resumed, not failed
        assert store.health() == "the database is read-only: it takes no writes"
        assert [r.id for r in store.load(10)] == ["a"]  # reading goes on
    finally:
        with _admin(postgres_url) as admin:
            admin.execute(f'ALTER DATABASE "{postgres_url.rpartition("/")[2]}" RESET default_transaction_read_only')
        store.close()


def test_a_database_that_is_down_gets_503_and_health_reports_it(postgres_url: str) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from searchain_graph.serve import create_app

    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)
    store = PostgresRunStore(postgres_url)
    app = create_app(graph, store=store)
    with TestClient(app, base_url="http://127.0.0.1") as client:
        assert client.get("/healthz").json()["ok"] is True
        store.url = "postgresql://postgres@127.0.0.1:1/gone"  # as a server that went away
        store.connect_timeout = 1.0
        store._conn.close()
        store._claims_conn.close()
        health = client.get("/healthz")
        assert health.status_code == 503 and "cannot be reached" in health.json()["store"]
        refused = client.post("/runs", json={"question": QUESTION})
        assert refused.status_code == 503 and refused.headers.get("retry-after") == "5"
        assert "try again later" in refused.json()["error"]
