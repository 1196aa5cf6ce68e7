"""``searchain serve --db postgresql://...``: runs, events, checkpoints and thread claims in PostgreSQL.

Several replicas of ``searchain serve`` can share one database. Each writes its runs and events
to the two tables of :class:`~searchain_graph.serve.store.SqlRunStore`, and the graph's checkpoints
go through LangGraph's ``AsyncPostgresSaver`` (:func:`open_postgres_checkpointer`), so any replica
can list a run, follow its events and resume it.

**Thread claims.** A replica runs a thread only while it holds a session-level advisory lock on it
(``pg_try_advisory_lock`` on a hash of the thread id), taken on a connection that the process keeps
for its claims alone. PostgreSQL releases those locks when the connection ends, so a replica that is
killed gives up its claims at once, and another replica (or the same one restarted) can adopt its
runs from their last checkpoint; a replica that is alive keeps them, and no other can run the same
thread meanwhile.

**Followers are told, not polling.** Every write of a run's row or event carries a
``NOTIFY searchain_runs, '<run id>'`` in the same statement (sent when it commits); each process
LISTENs on a connection of its own (a thread started with the first follower), and wakes the
followers of that run, which read it at once. A lost notification costs at most the fallback read
every :attr:`PostgresRunStore.follow_poll_s` seconds; a lost listening connection is opened again,
and every follower reads once more.

Needs the ``postgres`` extra (``langgraph-checkpoint-postgres``, ``psycopg[binary,pool]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any

from searchain_graph.serve.store import SqlRunStore, Statement, StoreOpenError, StoreWriteError, Watch, shown_url

__all__ = ["PG_SCHEMA", "PostgresRunStore", "open_postgres_checkpointer"]

logger = logging.getLogger(__name__)

PG_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS searchain_runs (id TEXT PRIMARY KEY, question TEXT NOT NULL, "
    "thread_id TEXT NOT NULL, created DOUBLE PRECISION NOT NULL, status TEXT NOT NULL, error TEXT, output TEXT)",
    "CREATE INDEX IF NOT EXISTS searchain_runs_created ON searchain_runs (created)",
    "CREATE INDEX IF NOT EXISTS searchain_runs_status ON searchain_runs (status)",
    "CREATE TABLE IF NOT EXISTS searchain_run_events (run_id TEXT NOT NULL REFERENCES searchain_runs(id) "
    "ON DELETE CASCADE, seq INTEGER NOT NULL, event TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq))",
)
"""The tables (the same as SQLite's, with PostgreSQL's types)."""

PG_COLUMNS = {
    "searchain_runs": {"id", "question", "thread_id", "created", "status", "error", "output"},
    "searchain_run_events": {"run_id", "seq", "event", "data"},
}
"""The columns each table needs: a table of another layout is refused when the store opens."""

SETUP_LOCK = 3_700_000_037
"""The advisory lock held while tables are created: replicas starting together do it one at a time."""
SETUP_POLL_S = 0.1
"""How often a replica tries the set-up lock again while another holds it."""
CLAIM_SEED = 37
"""The seed of ``hashtextextended`` for a thread's claim key."""
CHANNEL = "searchain_runs"
"""The ``NOTIFY`` channel on which a write names the run it changed."""
LISTEN_RETRY_S = 1.0
"""How long the listener waits before connecting again after losing its connection."""


HEALTH_WAIT_S = 1.0
"""How long ``/healthz`` waits for the store's connection before saying it is busy (healthy)."""


def _reason(exc: BaseException) -> str:
    """A database error in one line: the server's own message, else the error's first line."""
    primary = getattr(getattr(exc, "diag", None), "message_primary", None)
    if primary:
        return str(primary)
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        need = 'pip install "searchain-graph[postgres]"'
        raise ImportError(f"--db postgresql://... needs psycopg: {need} ({exc})") from exc
    return psycopg


class PostgresRunStore(SqlRunStore):
    """Runs and their events in PostgreSQL, shared by every replica on the database; claims across processes.

    Args:
        url: A ``postgresql://`` connection URL (``libpq`` keywords allowed in its query string).
        connect_timeout: Seconds to wait for the server when connecting.

    Raises:
        ImportError: psycopg is not installed.
        ConnectionError: the server cannot be reached, or refuses the login (the URL's password hidden).
    """

    shared = True
    follow_poll_s = 2.0
    """Changes are announced (``NOTIFY``): this fallback read only covers a lost notification."""

    def __init__(self, url: str, *, connect_timeout: float = 10.0) -> None:
        super().__init__()
        self.url = url
        self.connect_timeout = connect_timeout
        self._lock = threading.Lock()
        self._watches: dict[str, set[tuple[asyncio.AbstractEventLoop, Watch]]] = {}
        self._watch_lock = threading.Lock()
        self._listener: threading.Thread | None = None
        self._closing = threading.Event()
        self._write_error: str | None = None
        psycopg = _psycopg()
        try:
            self._conn = self._connect()
            self._claims_conn = self._connect()
            with self._setup_lock():
                tables = [s for s in PG_SCHEMA if s.startswith("CREATE TABLE")]
                for statement in tables:
                    self._conn.execute(statement)
                self._check_layout()  # before an index names a column an older table lacks
                for statement in PG_SCHEMA:
                    if statement not in tables:
                        self._conn.execute(statement)
        except ConnectionError as exc:
            raise StoreOpenError(str(exc)) from None
        except psycopg.Error as exc:
            raise StoreOpenError(f"--db {shown_url(url)}: cannot set up the runs' tables: {_reason(exc)}") from None

    def _check_layout(self) -> None:
        """Refuse tables of another layout (an older version's) before any run is written to them."""
        rows = self._conn.execute(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
            (list(PG_COLUMNS),),
        ).fetchall()
        found: dict[str, set[str]] = {}
        for table, column in rows:
            found.setdefault(table, set()).add(column)
        for table, columns in PG_COLUMNS.items():
            missing = sorted(columns - found.get(table, set()))
            if missing:
                raise StoreOpenError(
                    f"--db {shown_url(self.url)}: the table {table} is of another layout (no column "
                    f"{', '.join(missing)}): drop or rename it, or use another database"
                )

    def _connect(self) -> Any:
        psycopg = _psycopg()
        try:
            return psycopg.connect(
                self.url, autocommit=True, connect_timeout=max(1, round(self.connect_timeout)), prepare_threshold=None
            )
        except psycopg.OperationalError as exc:
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            raise ConnectionError(f"--db {shown_url(self.url)}: cannot connect: {reason}") from None

    @contextlib.contextmanager
    def _setup_lock(self) -> Iterator[None]:
        # Polled, not waited for: a statement waiting for the lock would hold a snapshot, and the
        # checkpointer's set-up (CREATE INDEX CONCURRENTLY) of another replica would wait for it.
        while not self._conn.execute("SELECT pg_try_advisory_lock(%s)", (SETUP_LOCK,)).fetchone()[0]:
            time.sleep(SETUP_POLL_S)
        try:
            yield
        finally:
            self._conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))

    def _clean(self, value: str | None) -> str | None:
        # PostgreSQL's text holds no NUL: it is kept as its escape, as a lone surrogate is.
        cleaned = super()._clean(value)
        return None if cleaned is None else cleaned.replace("\x00", "\\x00")

    def _run(self, sql: str, params: Sequence[Any] = (), *, write: bool = False) -> list[tuple[Any, ...]]:
        """One statement; a write the database refuses (down, read-only) raises :class:`StoreWriteError`."""
        psycopg = _psycopg()
        with self._lock:
            try:
                try:
                    rows = self._fetch(sql, params)
                except psycopg.OperationalError:
                    if not self._conn.closed:
                        raise
                    # The connection broke (the server restarted, an idle timeout, a proxy): one
                    # statement is one transaction, so it is sent again, once, on a new connection.
                    logger.warning("the connection to %s broke: connecting again", shown_url(self.url))
                    self._conn = self._connect()
                    rows = self._fetch(sql, params)
            except (psycopg.OperationalError, psycopg.errors.ReadOnlySqlTransaction, ConnectionError) as exc:
                if not write:
                    raise
                self._write_error = f"the database refused a write: {_reason(exc)}"
                raise StoreWriteError(self._write_error) from None
            if write:
                self._write_error = None
            return rows

    def health(self) -> str | None:
        """None while the database takes writes; else why not (down, unreachable, read-only)."""
        psycopg = _psycopg()
        if not self._lock.acquire(timeout=HEALTH_WAIT_S):
            return None  # a statement is running: the database answers
        try:
            if self._conn.closed:
                self._conn = self._connect()
            read_only = self._conn.execute("SHOW transaction_read_only").fetchone()
        except (psycopg.Error, ConnectionError) as exc:
            return f"the database cannot be reached: {_reason(exc)}"
        finally:
            self._lock.release()
        if read_only and str(read_only[0]).lower() == "on":
            return "the database is read-only: it takes no writes"
        return None

    def _fetch(self, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        cursor = self._conn.execute(sql, tuple(params))
        return list(cursor.fetchall()) if cursor.description is not None else []

    def _write(self, run_id: str, statements: Sequence[Statement]) -> None:
        """Run ``statements`` and announce the change to every replica: one statement, one round trip.

        Each is a data-modifying ``WITH`` of one statement that ends with ``pg_notify``, so the
        changes and the notification are one transaction (the notification is sent at its commit).
        """
        parts = [f"w{i} AS ({sql})" for i, (sql, _) in enumerate(statements)]
        params = [p for _, values in statements for p in values]
        sql = f"WITH {', '.join(parts)} SELECT pg_notify(%s, %s)"
        self._run(sql, (*params, CHANNEL, self._clean(run_id)), write=True)

    @contextlib.contextmanager
    def watch(self, run_id: str) -> Iterator[Watch]:
        """A :class:`Watch` set whenever any replica writes ``run_id`` (the listener started on first use)."""
        self._listen_once()
        entry = (asyncio.get_running_loop(), Watch())
        with self._watch_lock:
            self._watches.setdefault(run_id, set()).add(entry)
        try:
            yield entry[1]
        finally:
            with self._watch_lock:
                entries = self._watches.get(run_id, set())
                entries.discard(entry)
                if not entries:
                    self._watches.pop(run_id, None)

    def _listen_once(self) -> None:
        with self._watch_lock:
            if self._listener is None:
                self._listener = threading.Thread(target=self._listen, name="searchain-listen", daemon=True)
                self._listener.start()

    def _wake(self, run_id: str | None) -> None:
        """Set the watches on ``run_id`` (on every run for None), each on its own event loop."""
        with self._watch_lock:
            if run_id is None:
                entries = [e for group in self._watches.values() for e in group]
            else:
                entries = list(self._watches.get(run_id, ()))
        for loop, watch in entries:
            with contextlib.suppress(RuntimeError):  # its loop closed: nobody follows any more
                loop.call_soon_threadsafe(watch.set)

    def _listen(self) -> None:
        """The listener thread: LISTEN, and wake the followers of each run named; reconnect when cut off."""
        while not self._closing.is_set():
            try:
                conn = self._connect()
            except ConnectionError:
                self._closing.wait(LISTEN_RETRY_S)
                continue
            try:
                conn.execute(f"LISTEN {CHANNEL}")
                self._wake(None)  # changes made while nobody listened are read now
                while not self._closing.is_set():
                    for note in conn.notifies(timeout=0.5):
                        self._wake(note.payload)
            except Exception:  # noqa: BLE001 - a lost connection: listen again on a new one
                if not self._closing.is_set():
                    logger.warning("the listening connection to %s broke: connecting again", shown_url(self.url))
                    self._closing.wait(LISTEN_RETRY_S)
            finally:
                with contextlib.suppress(Exception):
                    conn.close()

    def _take(self, thread_id: str) -> bool:
        """Take the advisory lock of ``thread_id``; False when another process holds it.

        Raises:
            StoreWriteError: the database cannot be reached.
        """
        psycopg = _psycopg()
        try:
            if self._claims_conn.closed:
                logger.warning("the claims connection to %s was lost: connecting again", shown_url(self.url))
                self._claims.clear()  # the server released them with the old connection
                self._claims_conn = self._connect()
            row = self._claims_conn.execute(
                "SELECT pg_try_advisory_lock(hashtextextended(%s, %s))", (thread_id, CLAIM_SEED)
            ).fetchone()
        except (psycopg.Error, ConnectionError) as exc:
            raise StoreWriteError(f"the database cannot take a claim: {_reason(exc)}") from None
        return bool(row and row[0])

    def _give_up(self, thread_id: str) -> None:
        """Give up the advisory lock of ``thread_id`` (a lost connection has given it up already)."""
        if not self._claims_conn.closed:
            self._claims_conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, %s))", (thread_id, CLAIM_SEED))

    def close(self) -> None:
        """Close the connections (the server releases every claim still held) and stop the listener."""
        self._closing.set()
        if self._listener is not None:
            self._listener.join(timeout=5)
        with self._lock, self._claims_lock:
            self._claims.clear()
            for conn in (self._conn, self._claims_conn):
                if not conn.closed:
                    conn.close()


async def _try_setup_lock(conn: Any) -> bool:
    row = await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS held", (SETUP_LOCK,))).fetchone()
    return bool(row and row["held"])


async def open_postgres_checkpointer(url: str, *, max_size: int = 10) -> tuple[Any, Any]:
    """LangGraph's ``AsyncPostgresSaver`` on a pool of connections to ``url``, its tables set up.

    Replicas starting together set the tables up one at a time (an advisory lock).

    Args:
        url: The ``postgresql://`` URL.
        max_size: The pool's connections at most (runs at once, plus a few).

    Returns:
        The saver and the pool, which the caller closes (``await pool.close()``) when done.

    Raises:
        ImportError: ``langgraph-checkpoint-postgres`` or ``psycopg-pool`` is not installed.
    """
    try:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool
    except ImportError as exc:
        need = 'pip install "searchain-graph[postgres]"'
        raise ImportError(f"--db postgresql://... needs langgraph-checkpoint-postgres: {need} ({exc})") from exc
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    pool: Any = AsyncConnectionPool(url, min_size=1, max_size=max(2, max_size), kwargs=kwargs, open=False)
    await pool.open(wait=True, timeout=30)
    saver = AsyncPostgresSaver(pool)
    async with pool.connection() as conn:
        while not await _try_setup_lock(conn):
            await asyncio.sleep(SETUP_POLL_S)  # polled: see PostgresRunStore._setup_lock
        try:
            await saver.setup()
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
    return saver, pool
