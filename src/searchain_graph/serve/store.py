"""Where ``searchain serve`` keeps its runs: in memory, or in a SQLite file that outlives the process.

A run is its row (id, question, thread id, status, error, output) and its events, in order. The
:class:`~searchain_graph.serve.runs.RunManager` writes the row when the run starts and whenever
its status changes, and each event as it is emitted; on start it reads back the newest runs, so a
restarted server lists past runs and redraws their trees, and finds the runs that were in flight
when the process died (status ``queued`` or ``running``) to resume or fail them.

:class:`SqliteRunStore` writes each change in its own transaction (WAL journal): a process killed
mid-write leaves the previous state, never half an event. The graph's checkpoints go to the same
file through LangGraph's ``AsyncSqliteSaver`` (:func:`open_sqlite_checkpointer`), in its own
tables.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["MemoryRunStore", "RunStore", "SqliteRunStore", "StoredRun", "open_run_store", "open_sqlite_checkpointer"]

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


class RunStore:
    """Keeps nothing: the runs live only in the process (the default, as before ``--db``)."""

    durable = False
    """Whether runs outlive the process."""

    def save(self, run: StoredRun) -> None:
        """Write ``run``'s row (its events are written by :meth:`append`)."""

    def append(self, run_id: str, event: dict[str, Any]) -> None:
        """Write one event of a run whose row is saved."""

    def delete(self, run_id: str) -> None:
        """Forget a run and its events."""

    def load(self, limit: int) -> list[StoredRun]:
        """The newest ``limit`` runs with their events, oldest first."""
        return []

    def close(self) -> None:
        """Release the store's resources."""


MemoryRunStore = RunStore
"""The in-memory store: the runs are the :class:`~searchain_graph.serve.runs.RunManager`'s own."""


def _json(value: Any) -> str:
    # ensure_ascii: a lone surrogate in an answer or a drawn tree is written as an escape, never as
    # bytes SQLite cannot store as UTF-8.
    return json.dumps(value, ensure_ascii=True, allow_nan=False, default=str)


def _text(value: str | None) -> str | None:
    # A lone surrogate cannot be stored as UTF-8: it is kept as its escape ("\\ud800").
    return None if value is None else value.encode("utf-8", "backslashreplace").decode("utf-8")


class SqliteRunStore(RunStore):
    """Runs and their events in a SQLite file.

    Args:
        path: The database file (created with its tables when missing).

    Raises:
        sqlite3.DatabaseError: ``path`` is not a SQLite database.
    """

    durable = True

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("PRAGMA foreign_keys=ON")
        self._conn.executescript(SCHEMA)

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.execute(sql, params)
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    def save(self, run: StoredRun) -> None:
        """Insert or update ``run``'s row, in one transaction."""
        output = None if run.output is None else _json(run.output)
        self._write(
            "INSERT INTO searchain_runs (id, question, thread_id, created, status, error, output) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET status = excluded.status, "
            "error = excluded.error, output = excluded.output",
            (run.id, _text(run.question), _text(run.thread_id), run.created, run.status, _text(run.error), output),
        )

    def append(self, run_id: str, event: dict[str, Any]) -> None:
        """Write one event, in one transaction (an event already written with that number is kept)."""
        self._write(
            "INSERT OR IGNORE INTO searchain_run_events (run_id, seq, event, data) VALUES (?, ?, ?, ?)",
            (run_id, int(event["id"]), str(event["event"]), _json(event["data"])),
        )

    def delete(self, run_id: str) -> None:
        """Delete the run's row and, by cascade, its events."""
        self._write("DELETE FROM searchain_runs WHERE id = ?", (run_id,))

    def load(self, limit: int) -> list[StoredRun]:
        """The newest ``limit`` runs (by creation time), oldest first, each with its events."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT id, question, thread_id, created, status, error, output FROM searchain_runs "
                "ORDER BY created DESC LIMIT ?",
                (max(0, int(limit)),),
            ).fetchall()
            runs = []
            for rid, question, thread_id, created, status, err, output in reversed(rows):
                events = [
                    {"id": seq, "event": name, "data": json.loads(data)}
                    for seq, name, data in self._conn.execute(
                        "SELECT seq, event, data FROM searchain_run_events WHERE run_id = ? ORDER BY seq", (rid,)
                    )
                ]
                parsed = json.loads(output) if output else None
                runs.append(StoredRun(rid, question, thread_id, created, status, err, parsed, events))
        return runs

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def open_run_store(db: str | Path | None) -> RunStore:
    """The store for ``searchain serve --db``: SQLite for a path, in memory for None.

    Raises:
        ValueError: ``db`` is a URL of a database this version cannot open.
    """
    if db is None:
        return RunStore()
    text = str(db)
    if "://" in text:
        raise ValueError(f"--db {text!r}: only a SQLite file path is supported here (PostgreSQL URLs are not yet)")
    return SqliteRunStore(text)


async def open_sqlite_checkpointer(path: str | Path) -> Any:
    """LangGraph's ``AsyncSqliteSaver`` on ``path`` (needs ``langgraph-checkpoint-sqlite``), tables set up.

    Raises:
        ImportError: the package is not installed (``pip install "searchain-graph[serve]"``).
    """
    try:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
    except ImportError as exc:
        need = 'pip install "searchain-graph[serve]"'
        raise ImportError(f"durable runs need langgraph-checkpoint-sqlite: {need} ({exc})") from exc
    conn = await aiosqlite.connect(str(path), timeout=30)
    await conn.execute("PRAGMA journal_mode=WAL")
    saver = AsyncSqliteSaver(conn)
    await saver.setup()
    return saver
