"""Where ``searchain serve`` keeps its runs: in memory, in a SQLite file, or in PostgreSQL.

A run is its row (id, question, thread id, status, error, output) and its events, in order. The
:class:`~searchain_graph.serve.runs.RunManager` writes the row when the run starts and whenever
its status changes, and each event as it is emitted; on start it reads back the newest finished
runs and every run not finished, so a restarted server lists past runs and redraws their trees,
finds the runs that were in flight when the process died (status ``queued`` or ``running``) to
resume or fail them, and keeps those paused for review waiting.

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
import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchain_graph._text import redacted_url

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "MemoryRunStore",
    "RunStore",
    "SqlRunStore",
    "SqliteRunStore",
    "Statement",
    "StoreOpenError",
    "StoreWriteError",
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
COLUMNS = {
    "searchain_runs": ("id", "question", "thread_id", "created", "status", "error", "output"),
    "searchain_run_events": ("run_id", "seq", "event", "data"),
}
"""The columns each table must have (a table of another program, or of another layout, lacks some)."""

logger = logging.getLogger(__name__)


class StoreOpenError(ValueError):
    """``--db`` names no store this process can use.

    No such directory, not a SQLite file, damaged, read-only, or held by another server: the
    message is one line, naming the file and the reason.
    """


class StoreWriteError(RuntimeError):
    """The store cannot write now (disk full, file locked, deleted or read-only).

    The message says why, without the file's path (``/healthz`` shows it).
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


class SqliteRunStore(SqlRunStore):
    """Runs and their events in a SQLite file, which one server uses at a time.

    Opening it checks the file before anything else is loaded: its directory exists; it is a file
    this process may write (or is created); it is a SQLite database whose pages read back whole
    (``PRAGMA quick_check``); its tables, when present, have the columns written here. Then the
    process takes an exclusive lock (``flock``) on ``FILE.lock`` beside it, held until :meth:`close`
    or the process ends (a killed process's lock goes with it): a second server on the same file is
    refused, rather than resuming the first one's live runs a second time. Its claims on threads
    are then the process's own.

    A write that fails because of the database (disk full, the file locked by another program,
    deleted or replaced, read-only) raises :class:`StoreWriteError`, and :meth:`health` says why
    until a write succeeds again.

    Args:
        path: The database file (created with its tables when missing).
        timeout: Seconds a write waits for a lock that another connection holds before it fails.

    Raises:
        StoreOpenError: ``path`` cannot be used: its directory is missing, it is a directory, it is
            read-only, not a SQLite database or damaged, its tables are another program's, or
            another server holds it. One line, naming the file.
    """

    def __init__(self, path: str | Path, *, timeout: float = 30.0) -> None:
        super().__init__()
        self.path = Path(path)
        self.timeout = timeout
        self._lock = threading.Lock()
        self._write_error: str | None = None
        _check_path(self.path)
        self._where = Path(os.path.abspath(self.path))
        self._lock_file = _hold(self.path)
        try:
            self._conn = _connect(self.path, timeout)
            try:
                self._identity = _identity(self._where)
            except OSError:  # ":memory:", say
                self._conn.close()
                raise StoreOpenError(f"--db {path}: names no file (the runs are kept in a file)") from None
        except BaseException:
            self._lock_file.close()
            raise

    def _run(self, sql: str, params: Sequence[Any] = (), *, write: bool = False) -> list[tuple[Any, ...]]:
        if write:
            return self._transaction([(sql, tuple(params))])
        with self._lock:
            return self._conn.execute(sql.replace("%s", "?"), tuple(params)).fetchall()

    def _write(self, run_id: str, statements: Sequence[Statement]) -> None:
        self._transaction(statements)

    def _transaction(self, statements: Sequence[Statement]) -> list[tuple[Any, ...]]:
        """Run ``statements`` in one transaction; the rows the last one returns.

        Raises:
            StoreWriteError: the database cannot write (the transaction is rolled back).
            sqlite3.IntegrityError: a statement was refused (a constraint, a trigger).
        """
        found: list[tuple[Any, ...]] = []
        with self._lock:
            changes = self._conn.total_changes
            try:
                self._same_file()
                self._conn.execute("BEGIN IMMEDIATE")
                try:
                    for sql, params in statements:
                        found = self._conn.execute(sql.replace("%s", "?"), params).fetchall()
                    self._conn.execute("COMMIT")  # may fail too (disk full): rolled back below
                except BaseException:
                    if self._conn.in_transaction:
                        with contextlib.suppress(sqlite3.Error):
                            self._conn.execute("ROLLBACK")
                    raise
            except (sqlite3.OperationalError, OSError) as exc:
                raise self._cannot_write(exc) from exc
            except sqlite3.DatabaseError as exc:
                if type(exc) is not sqlite3.DatabaseError:  # IntegrityError and kin: the statement's own fault
                    raise
                raise self._cannot_write(exc) from exc  # "database disk image is malformed"
            # Cleared by a transaction that wrote something: one that changes nothing writes nothing.
            if self._conn.total_changes != changes:
                self._write_error = None
            return found

    def _cannot_write(self, exc: BaseException) -> StoreWriteError:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self._write_error = f"cannot write: {reason}"
        return StoreWriteError(self._write_error)

    def _same_file(self) -> None:
        """Raise :class:`StoreWriteError` when the file was deleted or replaced since it was opened."""
        try:
            now: tuple[int, int] | None = _identity(self._where)
        except OSError:
            now = None
        if now != self._identity:
            self._write_error = (
                "cannot write: the database file was deleted or replaced while the server ran (restart the server)"
            )
            raise StoreWriteError(self._write_error)

    def health(self) -> str | None:
        """None while the store can write; else why not.

        After a failed write, a small write (a row written and deleted in one transaction, waiting
        at most a second for a lock) tells whether it can write again.
        """
        try:
            self._same_file()
        except StoreWriteError as exc:
            return str(exc)
        if self._write_error is not None and self._lock.acquire(timeout=PROBE_WAIT_S):
            try:
                self._probe()
            finally:
                self._lock.release()
        return self._write_error

    def _probe(self) -> None:
        """Write and delete one row, in one transaction (called with the lock held)."""
        conn = self._conn
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(PROBE_WAIT_S * 1000)}")
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(f"INSERT INTO searchain_runs ({ROW}) VALUES (?, '', '', 0, 'probe', NULL, NULL)", (PROBE,))
                conn.execute("DELETE FROM searchain_runs WHERE id = ?", (PROBE,))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    with contextlib.suppress(sqlite3.Error):
                        conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            self._write_error = f"cannot write: {exc}"
        else:
            self._write_error = None
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.execute(f"PRAGMA busy_timeout = {int(self.timeout * 1000)}")

    def close(self) -> None:
        """Close the connection and give up the file's lock."""
        with self._lock:
            self._conn.close()
            self._lock_file.close()


PROBE = "searchain-health-probe"
"""The id of the row :meth:`SqliteRunStore.health` writes and deletes to learn whether it can write again."""
PROBE_WAIT_S = 1.0
"""How long that probe waits for a lock."""


def _check_path(path: Path) -> None:
    """Refuse a path that cannot be a database this process writes (see :class:`SqliteRunStore`)."""
    if str(path) == ":memory:":
        raise StoreOpenError(f"--db {path}: names no file (the runs are kept in a file)")
    if path.is_dir():
        raise StoreOpenError(f"--db {path}: is a directory, not a SQLite file")
    parent = path.parent
    if not parent.is_dir():
        raise StoreOpenError(f"--db {path}: no such directory: {parent}")
    if path.exists():
        if not path.is_file():
            raise StoreOpenError(f"--db {path}: is not a regular file")
        if not os.access(path, os.R_OK | os.W_OK):
            raise StoreOpenError(f"--db {path}: the file is read-only for this user (every run is written to it)")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise StoreOpenError(f"--db {path}: cannot create files in {parent} (SQLite keeps its journal beside the file)")


def _hold(path: Path) -> Any:
    """Open ``PATH.lock`` and take its exclusive lock for this process; the open file (closing it gives the lock up).

    Raises:
        StoreOpenError: another process holds it, or it cannot be created.
    """
    where = Path(os.path.realpath(path))
    lock_path = where.with_name(where.name + ".lock")
    try:
        handle = open(lock_path, "a+")  # noqa: SIM115 - held for the store's life, closed by close()
    except OSError as exc:
        raise StoreOpenError(f"--db {path}: cannot create its lock file {lock_path}: {exc.strerror}") from None
    if fcntl is None:  # no flock (Windows): one server per file is the operator's to keep
        return handle
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.seek(0)
        holder = handle.read(20).strip()
        handle.close()
        who = f" (process {holder})" if holder.isdigit() else ""
        raise StoreOpenError(
            f"--db {path}: another server uses this file{who}; one server per SQLite file (several need PostgreSQL)"
        ) from None
    except OSError as exc:  # a file system without locks: go on, unguarded
        logger.warning("--db %s: cannot lock %s (%s): nothing stops a second server on it", path, lock_path, exc)
        return handle
    handle.truncate(0)
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def _identity(path: Path) -> tuple[int, int]:
    found = os.stat(path)
    return found.st_dev, found.st_ino


def _lenient_text(data: bytes) -> str:
    # A value another program wrote that is not UTF-8 is read with U+FFFD, rather than failing the whole read.
    return data.decode("utf-8", "replace")


def _connect(path: Path, timeout: float) -> sqlite3.Connection:
    """A connection to the database at ``path``, checked whole and with its tables (see :class:`SqliteRunStore`)."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=timeout)
    try:
        conn.text_factory = _lenient_text
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        damage = conn.execute("PRAGMA quick_check(1)").fetchone()
        if damage is None or damage[0] != "ok":
            raise StoreOpenError(f"--db {path}: the database is damaged ({damage[0] if damage else 'unreadable'})")
        conn.executescript(SCHEMA)
        for table, wanted in COLUMNS.items():
            have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
            missing = [column for column in wanted if column not in have]
            if missing:
                raise StoreOpenError(
                    f"--db {path}: its table {table} lacks the column(s) {', '.join(missing)}: another program's "
                    "database, or another layout"
                )
    except sqlite3.OperationalError as exc:
        conn.close()
        raise StoreOpenError(f"--db {path}: cannot be opened ({exc})") from None
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise StoreOpenError(f"--db {path}: not a SQLite database, or a damaged one ({exc})") from None
    except BaseException:
        conn.close()
        raise
    return conn


def is_postgres_url(db: str | Path | None) -> bool:
    """Whether ``--db`` names a PostgreSQL database (``postgresql://`` or ``postgres://``)."""
    return isinstance(db, str) and db.lower().startswith(("postgresql://", "postgres://"))


def shown_url(url: str) -> str:
    """``url`` with its password hidden (:func:`~searchain_graph._text.redacted_url`), as logs and errors show it."""
    return repr(redacted_url(url)[:200])


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
    try:
        await conn.execute("PRAGMA journal_mode=WAL")
        saver = AtomicSqliteSaver(conn)
        await saver.setup()
    except BaseException:
        # Closed: its thread (not a daemon) would keep a process that failed to start alive.
        await conn.close()
        raise
    return saver
