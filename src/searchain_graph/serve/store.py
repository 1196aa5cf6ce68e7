"""Where ``searchain serve`` keeps its runs: in memory, in a SQLite file, or in PostgreSQL.

A run is its row (id, question, thread id, status, error, output) and its events, in order. The
:class:`~searchain_graph.serve.runs.RunManager` writes the row when the run starts and whenever
its status changes, and each event as it is emitted; on start it reads back the newest finished
runs and every run not finished, so a restarted server lists past runs and redraws their trees,
finds the runs that were in flight when the process died (status ``queued`` or ``running``) to
resume or fail them, and keeps those paused for review waiting.

:class:`SqlRunStore` holds the SQL of both databases. A SQLite file, one server's, is
:class:`~searchain_graph.serve.sqlite_store.SqliteRunStore`; PostgreSQL, shared by replicas, is
:class:`~searchain_graph.serve.postgres.PostgresRunStore`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from searchain_graph._text import redacted_url

__all__ = [
    "ClaimLostError",
    "MemoryRunStore",
    "RunStore",
    "SqlRunStore",
    "Statement",
    "StoreOpenError",
    "StoreWriteError",
    "StoredRun",
    "Watch",
    "error_in_chain",
    "is_postgres_url",
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
COLUMNS = {
    "searchain_runs": ("id", "question", "thread_id", "created", "status", "error", "output"),
    "searchain_run_events": ("run_id", "seq", "event", "data"),
}
"""The columns each table must have (a table of another program, or of another layout, lacks some)."""

logger = logging.getLogger(__name__)

_E = TypeVar("_E", bound=BaseException)


class StoreOpenError(ValueError):
    """``--db`` names no store this process can use.

    No such directory, not a SQLite file, damaged, read-only, or held by another server: the
    message is one line, naming the file and the reason.
    """


class StoreWriteError(RuntimeError):
    """The store cannot write now (disk full, file locked, deleted or read-only).

    The message says why, without the file's path (``/healthz`` shows it). ``interrupted`` is
    true when the database was out of reach for a moment (its connection lost, a restart) rather
    than refusing the write.
    """

    def __init__(self, message: str, *, interrupted: bool = False) -> None:
        super().__init__(message)
        self.interrupted = interrupted


class ClaimLostError(RuntimeError):
    """This process can no longer show that it holds the claim on a thread: the thread's work stops here.

    With PostgreSQL, the claims connection was cut (or went unanswered for too long), and the
    server gave its claims up with it; another replica may take the thread once the claim's grace
    has passed (:attr:`RunStore.claim_grace_s`).
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
    Here (and in SQLite, which one process serves) the claims are the process's own. A shared
    store's claim can be lost while the process lives (PostgreSQL: its connection cut): a run
    checks it (:meth:`holds`, :meth:`confirm`) and stops once it is not held.
    """

    durable = False
    """Whether runs outlive the process."""
    shared = False
    """Whether other processes (replicas) write the same store: then runs and events are read
    back from it, and claims hold across processes."""
    follow_poll_s = 0.25
    """How often a follower reads a run again when no change is announced (a store that announces
    its changes, through :meth:`watch`, is read again at once and this is only the fallback)."""
    claim_grace_s = 0.0
    """How long a process that claims a thread another process may have been running waits before
    it runs it: long enough for a process that lost that claim to have stopped (PostgreSQL)."""

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
        """The runs to read back at start, with their events, oldest first.

        Every run not finished (in flight, or paused for review), however old, and the newest
        ``limit`` finished ones.
        """
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

    def holds(self, thread_id: str) -> bool:
        """Whether this process holds the claim on ``thread_id`` now, as far as it last heard (no round trip)."""
        return thread_id in self._claims

    def confirm(self, thread_id: str) -> None:
        """Make sure this process still holds the claim on ``thread_id`` (with PostgreSQL, a round trip).

        Raises:
            ClaimLostError: it does not, or cannot show that it does.
        """
        if not self.holds(thread_id):
            raise ClaimLostError(f"this process no longer holds the claim on thread {thread_id}")

    def interrupted(self, exc: BaseException) -> bool:
        """Whether ``exc`` is the store's database out of reach for a moment rather than the run's own failure.

        A lost connection, a restart of the server: such a run is resumed, not failed.
        """
        return False

    def refusal(self, exc: BaseException) -> str | None:
        """Why the store refused what ``exc`` (or an error it came from) was writing, when it refused it; else None.

        A refusal lasts (a full disk, a read-only database): the run fails. A connection lost for
        a moment is no refusal (:meth:`interrupted`).
        """
        found = error_in_chain(exc, StoreWriteError)
        return None if found is None or found.interrupted else str(found)

    def wake(self, run_id: str) -> None:
        """Wake this process's followers of ``run_id`` (:meth:`watch`): it changed here, in memory."""

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

    def health(self) -> str | None:
        """None while the store can write; else why not (``/healthz`` shows it; no file path in it)."""
        return None

    def close(self) -> None:
        """Release the store's resources."""


def error_in_chain(exc: BaseException, kind: type[_E]) -> _E | None:
    """``exc`` or the first error it was raised from (or during) that is a ``kind``; None if there is none."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


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
    """The run a stored row holds.

    Raises:
        ValueError: the row cannot be read (not JSON, a created time that is no number, a field of another type).
    """
    rid, question, thread_id, created, status, err, output = values
    parsed = json.loads(output) if output else None
    if not isinstance(parsed, dict | None):
        raise ValueError(f"its output is {type(parsed).__name__}, not an object")
    if isinstance(created, str | bytes) or created is None:
        raise ValueError(f"its created time {str(created)[:40]!r} is no number")
    if not all(isinstance(v, str) for v in (rid, question, thread_id, status)) or not isinstance(err, str | None):
        raise ValueError("a field is not text")
    return StoredRun(rid, question, thread_id, float(created), status, err, parsed, events or [])


def _readable(values: Sequence[Any]) -> StoredRun | None:
    """The run a stored row holds, or None (with a warning naming it) when the row cannot be read."""
    try:
        return _row(values)
    except (ValueError, TypeError) as exc:
        logger.warning("stored run %s is left out: its row cannot be read (%s)", str(values[0])[:80], exc)
        return None


def _event(seq: Any, name: Any, data: Any) -> dict[str, Any]:
    """One stored event.

    Raises:
        ValueError: it cannot be read (its data not a JSON object).
    """
    parsed = json.loads(data)
    if not isinstance(parsed, dict) or not isinstance(name, str):
        raise ValueError(f"event {seq} is not an event (its data is {type(parsed).__name__})")
    return {"id": int(seq), "event": name, "data": parsed}


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
        return [run for run in map(_readable, found) if run is not None]

    def events_after(self, run_id: str, seq: int) -> list[dict[str, Any]]:
        """The run's events numbered above ``seq``, in order.

        Raises:
            ValueError: an event cannot be read.
        """
        found = self._run(
            "SELECT seq, event, data FROM searchain_run_events WHERE run_id = %s AND seq > %s ORDER BY seq",
            (run_id, int(seq)),
        )
        return [_event(n, name, data) for n, name, data in found]

    def _with_events(self, run: StoredRun) -> StoredRun | None:
        """``run`` with its events, or None (with a warning naming it) when one cannot be read."""
        try:
            run.events = self.events_after(run.id, -1)
        except (ValueError, TypeError) as exc:
            logger.warning("stored run %s is left out: its events cannot be read (%s)", run.id[:80], exc)
            return None
        return run

    def load(self, limit: int) -> list[StoredRun]:
        """Every run not finished and the newest ``limit`` finished ones, oldest first, with their events.

        A run whose row or events cannot be read is left out, with a warning naming it.
        """
        found = self._run(
            f"SELECT {ROW} FROM searchain_runs WHERE status NOT IN ('done', 'error') OR id IN (SELECT id FROM "
            "searchain_runs WHERE status IN ('done', 'error') ORDER BY created DESC LIMIT %s) ORDER BY created",
            (max(0, int(limit)),),
        )
        runs = (run for run in map(_readable, found) if run is not None)
        return [loaded for loaded in map(self._with_events, runs) if loaded is not None]

    def get_row(self, run_id: str) -> StoredRun | None:
        """One run without its events, or None (also when its row cannot be read: a warning says so)."""
        found = self._run(f"SELECT {ROW} FROM searchain_runs WHERE id = %s", (run_id,))
        return _readable(found[0]) if found else None

    def get(self, run_id: str) -> StoredRun | None:
        """One run with its events, or None (also when they cannot be read: a warning says so)."""
        run = self.get_row(run_id)
        return None if run is None else self._with_events(run)

    def in_flight(self) -> list[StoredRun]:
        """The runs stored as ``queued`` or ``running``, oldest first, without events (unreadable ones left out)."""
        found = self._run(f"SELECT {ROW} FROM searchain_runs WHERE status IN ('queued', 'running') ORDER BY created")
        return [run for run in map(_readable, found) if run is not None]


def is_postgres_url(db: str | Path | None) -> bool:
    """Whether ``--db`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(db, str) and db.lower().startswith(("postgresql://", "postgres://"))


def shown_url(url: str) -> str:
    """``url`` with its password hidden (:func:`~searchain_graph._text.redacted_url`), as logs and errors show it."""
    return repr(redacted_url(url)[:200])
