"""Where ``searchain serve`` keeps its runs: in memory, in a SQLite file, or in PostgreSQL.

A run is its row (id, question, thread id, status, error, output) and its events, in order. The
:class:`~searchain_graph.serve.runs.RunManager` writes the row when the run starts and whenever
its status changes, and each event as it is emitted; on start it reads back the newest runs, so a
restarted server lists past runs and redraws their trees, and finds the runs that were in flight
when the process died (status ``queued`` or ``running``) to resume or fail them.

:class:`SqlRunStore` holds the SQL of both databases; :class:`SqliteRunStore` writes each change in
its own transaction (WAL journal): a process killed mid-write leaves the previous state, never half
an event. The graph's checkpoints go to the same file through LangGraph's ``AsyncSqliteSaver``
(:func:`open_sqlite_checkpointer`; each task's writes stored whole by
:class:`~searchain_graph.serve.sqlite_saver.AtomicSqliteSaver`), in its own tables. PostgreSQL, shared by replicas, is
:class:`~searchain_graph.serve.postgres.PostgresRunStore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "MemoryRunStore",
    "RunStore",
    "SqlRunStore",
    "SqliteRunStore",
    "Statement",
    "StoredRun",
    "Watch",
    "is_postgres_url",
    "open_sqlite_checkpointer",
    "shown_url",
]

SCHEMA = """
CREATE TABLE IF NOT EXISTS searchain_runs (
    id TEXT PRIMARY KEY,
    question TEXT NOT NULL,
    thread_id TEXT NOT NULL,
    created REAL NOT NULL,
    status TEXT NOT NULL,
    error TEXT,
    output TEXT
);
CREATE TABLE IF NOT EXISTS searchain_run_events (
    run_id TEXT NOT NULL REFERENCES searchain_runs(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,
    event TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"""


@dataclass
class StoredRun:
    """A run as stored: its row and its events (``{"id", "event", "data"}``, in order)."""

    id: str
    question: str
    thread_id: str
    created: float
    status: str
    error: str | None = None
    output: dict[str, Any] | None = None
    events: list[dict[str, Any]] = field(default_factory=list)


class Watch:
    """Says when a run followed in a shared store may have changed (new events, a new status).

    A store that cannot say leaves it unset, and a follower reads again every ``timeout`` seconds;
    PostgreSQL sets it on each notification (``LISTEN``/``NOTIFY``).
    """

    def __init__(self) -> None:
        self._flag = asyncio.Event()

    def clear(self) -> None:
        """Forget the changes seen so far (called just before reading the run again)."""
        self._flag.clear()

    def set(self) -> None:
        """Mark a change (on the watch's event loop)."""
        self._flag.set()

    async def wait(self, timeout: float) -> None:
        """Return once a change is marked, or after ``timeout`` seconds."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._flag.wait(), timeout)


class RunStore:
    """Keeps nothing: the runs live only in the process (the default, as before ``--db``).

    Every store also claims threads: a run executes only while its process holds the claim on its
    thread, so that no two tasks, or with a shared store no two replicas, run one thread at once.
    Here (and in SQLite, which one process serves) the claims are the process's own.
    """

    durable = False
    """Whether runs outlive the process."""
    shared = False
    """Whether other processes (replicas) write the same store: then runs and events are read
    back from it, and claims hold across processes."""
    follow_poll_s = 0.25
    """How often a follower reads a run again when no change is announced (a store that announces
    its changes, through :meth:`watch`, is read again at once and this is only the fallback)."""

    def __init__(self) -> None:
        self._claims: set[str] = set()
        self._claims_lock = threading.Lock()

    def save(self, run: StoredRun) -> None:
        """Write ``run``'s row (its events are written by :meth:`append`)."""

    def append(self, run_id: str, event: dict[str, Any]) -> None:
        """Write one event of a run whose row is saved."""

    def record(self, run_id: str, event: dict[str, Any], row: StoredRun | None = None) -> None:
        """Write one event of a run and, when given, its new row, together: both or neither.

        A run's end is its row ("done") and its last event: a reader, or a process killed between
        two writes, never finds one without the other.
        """
        if row is not None:
            self.save(row)
        self.append(run_id, event)

    def delete(self, run_id: str) -> None:
        """Forget a run and its events."""

    def prune(self, keep: int) -> list[str]:
        """Forget the finished runs (``done``, ``error``) beyond the newest ``keep``, with their events.

        With a shared store this spans every replica's runs, those of replicas gone included.

        Returns:
            The thread ids of the runs forgotten (their checkpoints are the caller's to drop).
        """
        return []

    def load(self, limit: int) -> list[StoredRun]:
        """The newest ``limit`` runs with their events, oldest first."""
        return []

    def rows(self, limit: int) -> list[StoredRun]:
        """The newest ``limit`` runs without their events, newest first."""
        return []

    def get(self, run_id: str) -> StoredRun | None:
        """One run with its events, or None."""
        return None

    def get_row(self, run_id: str) -> StoredRun | None:
        """One run without its events, or None."""
        return None

    def events_after(self, run_id: str, seq: int) -> list[dict[str, Any]]:
        """The run's events numbered above ``seq``, in order."""
        return []

    def in_flight(self) -> list[StoredRun]:
        """The runs stored as ``queued`` or ``running`` (without events): in flight somewhere, or orphaned."""
        return []

    @contextlib.contextmanager
    def watch(self, run_id: str) -> Iterator[Watch]:
        """A :class:`Watch` on ``run_id`` for as long as the block runs (here: never set)."""
        yield Watch()

    def claim(self, thread_id: str) -> bool:
        """Claim ``thread_id`` for this process; False when it is claimed already (here or elsewhere)."""
        with self._claims_lock:
            if thread_id in self._claims or not self._take(thread_id):
                return False
            self._claims.add(thread_id)
            return True

    def release(self, thread_id: str) -> None:
        """Give up the claim on ``thread_id`` (nothing when it is not held)."""
        with self._claims_lock:
            if thread_id in self._claims:
                self._claims.discard(thread_id)
                self._give_up(thread_id)

    def _take(self, thread_id: str) -> bool:
        """Claim ``thread_id`` from the other processes (called with the claims lock held): none here."""
        return True

    def _give_up(self, thread_id: str) -> None:
        """Give ``thread_id`` back to the other processes (called with the claims lock held)."""

    def close(self) -> None:
        """Release the store's resources."""


MemoryRunStore = RunStore
"""The in-memory store: the runs are the :class:`~searchain_graph.serve.runs.RunManager`'s own."""


def _json(value: Any) -> str:
    # ensure_ascii: a lone surrogate (or a NUL) in an answer or a drawn tree is written as an
    # escape, never as bytes the database cannot store as UTF-8 text.
    return json.dumps(value, ensure_ascii=True, allow_nan=False, default=str)


def _text(value: str | None) -> str | None:
    # A lone surrogate cannot be stored as UTF-8: it is kept as its escape ("\\ud800").
    return None if value is None else value.encode("utf-8", "backslashreplace").decode("utf-8")


ROW = "id, question, thread_id, created, status, error, output"

Statement = tuple[str, tuple[Any, ...]]
"""One SQL statement (``%s`` placeholders) and its parameters."""


def _row(values: Sequence[Any], events: list[dict[str, Any]] | None = None) -> StoredRun:
    rid, question, thread_id, created, status, err, output = values
    parsed = json.loads(output) if output else None
    return StoredRun(rid, question, thread_id, float(created), status, err, parsed, events or [])


class SqlRunStore(RunStore):
    """Runs and events in two SQL tables; a subclass says how a statement reaches its database.

    Statements are written with ``%s`` placeholders; each write is its own transaction.
    """

    durable = True

    def _run(self, sql: str, params: Sequence[Any] = (), *, write: bool = False) -> list[tuple[Any, ...]]:
        """Run one statement (in its own transaction when ``write``); the rows it returns."""
        raise NotImplementedError

    def _clean(self, value: str | None) -> str | None:
        return _text(value)

    def _write(self, run_id: str, statements: Sequence[Statement]) -> None:
        """Run ``statements``, all changes of run ``run_id``, in one transaction."""
        raise NotImplementedError

    def _upsert(self, run: StoredRun) -> Statement:
        output = None if run.output is None else _json(run.output)
        clean = self._clean
        return (
            f"INSERT INTO searchain_runs ({ROW}) VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT(id) DO UPDATE "
            "SET status = excluded.status, error = excluded.error, output = excluded.output",
            (run.id, clean(run.question), clean(run.thread_id), run.created, run.status, clean(run.error), output),
        )

    @staticmethod
    def _insert_event(run_id: str, event: dict[str, Any]) -> Statement:
        return (
            "INSERT INTO searchain_run_events (run_id, seq, event, data) VALUES (%s, %s, %s, %s) "
            "ON CONFLICT DO NOTHING",
            (run_id, int(event["id"]), str(event["event"]), _json(event["data"])),
        )

    def save(self, run: StoredRun) -> None:
        """Insert or update ``run``'s row, in one transaction."""
        self._write(run.id, [self._upsert(run)])

    def append(self, run_id: str, event: dict[str, Any]) -> None:
        """Write one event, in one transaction (an event already written with that number is kept)."""
        self._write(run_id, [self._insert_event(run_id, event)])

    def record(self, run_id: str, event: dict[str, Any], row: StoredRun | None = None) -> None:
        """Write one event and, when given, the run's row, in one transaction."""
        self._write(run_id, [*([self._upsert(row)] if row is not None else []), self._insert_event(run_id, event)])

    def delete(self, run_id: str) -> None:
        """Delete the run's row and, by cascade, its events."""
        self._run("DELETE FROM searchain_runs WHERE id = %s", (run_id,), write=True)

    def prune(self, keep: int) -> list[str]:
        """Delete the finished runs beyond the newest ``keep`` (by creation time) in one statement."""
        found = self._run(
            "DELETE FROM searchain_runs WHERE status IN ('done', 'error') AND id NOT IN (SELECT id FROM "
            "searchain_runs WHERE status IN ('done', 'error') ORDER BY created DESC LIMIT %s) RETURNING thread_id",
            (max(0, int(keep)),),
            write=True,
        )
        return [str(thread_id) for (thread_id,) in found]

    def rows(self, limit: int) -> list[StoredRun]:
        """The newest ``limit`` runs (by creation time), newest first, without events."""
        found = self._run(f"SELECT {ROW} FROM searchain_runs ORDER BY created DESC LIMIT %s", (max(0, int(limit)),))
        return [_row(values) for values in found]

    def events_after(self, run_id: str, seq: int) -> list[dict[str, Any]]:
        """The run's events numbered above ``seq``, in order."""
        found = self._run(
            "SELECT seq, event, data FROM searchain_run_events WHERE run_id = %s AND seq > %s ORDER BY seq",
            (run_id, int(seq)),
        )
        return [{"id": int(n), "event": name, "data": json.loads(data)} for n, name, data in found]

    def load(self, limit: int) -> list[StoredRun]:
        """The newest ``limit`` runs (by creation time), oldest first, each with its events."""
        runs = list(reversed(self.rows(limit)))
        for run in runs:
            run.events = self.events_after(run.id, -1)
        return runs

    def get_row(self, run_id: str) -> StoredRun | None:
        """One run without its events, or None."""
        found = self._run(f"SELECT {ROW} FROM searchain_runs WHERE id = %s", (run_id,))
        return _row(found[0]) if found else None

    def get(self, run_id: str) -> StoredRun | None:
        """One run with its events, or None."""
        run = self.get_row(run_id)
        if run is not None:
            run.events = self.events_after(run_id, -1)
        return run

    def in_flight(self) -> list[StoredRun]:
        """The runs stored as ``queued`` or ``running``, oldest first, without events."""
        found = self._run(f"SELECT {ROW} FROM searchain_runs WHERE status IN ('queued', 'running') ORDER BY created")
        return [_row(values) for values in found]


class SqliteRunStore(SqlRunStore):
    """Runs and their events in a SQLite file (one process: its claims are the process's own).

    Args:
        path: The database file (created with its tables when missing).

    Raises:
        sqlite3.DatabaseError: ``path`` is not a SQLite database.
    """

    def __init__(self, path: str | Path) -> None:
        super().__init__()
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.executescript(SCHEMA)

    def _run(self, sql: str, params: Sequence[Any] = (), *, write: bool = False) -> list[tuple[Any, ...]]:
        if write:
            return self._transaction([(sql, tuple(params))])
        with self._lock:
            return self._conn.execute(sql.replace("%s", "?"), tuple(params)).fetchall()

    def _write(self, run_id: str, statements: Sequence[Statement]) -> None:
        self._transaction(statements)

    def _transaction(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction; the rows the last one returns."""
        found: list[tuple[Any, ...]] = []
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    found = self._conn.execute(sql.replace("%s", "?"), params).fetchall()
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")
            return found

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def is_postgres_url(db: str | Path | None) -> bool:
    """Whether ``--db`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(db, str) and db.lower().startswith(("postgresql://", "postgres://"))


def shown_url(url: str) -> str:
    """``url`` with its password hidden, as logs and errors show it."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in credentials:
        return repr(url[:200])
    return repr(f"{scheme}://{credentials.split(':', 1)[0]}:…@{host}"[:200])


async def open_sqlite_checkpointer(path: str | Path) -> Any:
    """LangGraph's ``AsyncSqliteSaver`` on ``path`` (needs ``langgraph-checkpoint-sqlite``), tables set up.

    Raises:
        ImportError: the package is not installed (``pip install "searchain-graph[serve]"``).
    """
    try:
        import aiosqlite

        from searchain_graph.serve.sqlite_saver import AtomicSqliteSaver
    except ImportError as exc:
        need = 'pip install "searchain-graph[serve]"'
        raise ImportError(f"durable runs need langgraph-checkpoint-sqlite: {need} ({exc})") from exc
    # Autocommit: each of the saver's statements is its own transaction. With Python's implicit
    # transactions, a transaction of the saver was at times left open after a run was cancelled,
    # and every later write to the file waited for it and failed ("database is locked"; 3 of 8
    # runs of the in-process restart test, 0 of 16 in autocommit). The one write of several
    # statements, a task's writes, is made one transaction by AtomicSqliteSaver.
    conn = await aiosqlite.connect(str(path), timeout=30, isolation_level=None)
    await conn.execute("PRAGMA journal_mode=WAL")
    saver = AtomicSqliteSaver(conn)
    await saver.setup()
    return saver
