"""A SQLite file that keeps ``searchain serve``'s runs and the graph's checkpoints, one server's.

:class:`SqliteRunStore` writes each change in its own transaction (WAL journal): a process
killed mid-write leaves the previous state, never half an event. It checks the file before
anything else loads, holds it for one server (``flock`` on ``FILE.lock``), and says when it can
no longer write (disk full, the file locked or gone). The graph's checkpoints go to the same
file through LangGraph's ``AsyncSqliteSaver`` (:func:`open_sqlite_checkpointer`; each task's
writes stored whole by :class:`~searchain_graph.serve.sqlite_saver.AtomicSqliteSaver`), in its
own tables.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchain_graph.serve.store import (
    COLUMNS,
    ROW,
    SCHEMA,
    SqlRunStore,
    Statement,
    StoreOpenError,
    StoreWriteError,
)

try:
    import fcntl
except ImportError:  # Windows: no flock
    fcntl = None  # type: ignore[assignment]

__all__ = ["SqliteRunStore", "open_sqlite_checkpointer"]

logger = logging.getLogger(__name__)


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
