"""``searchain serve --db postgresql://...``: runs, events, checkpoints and thread claims in PostgreSQL.

Several replicas of ``searchain serve`` can share one database. Each writes its runs and events
to the two tables of :class:`~searchain_graph.serve.store.SqlRunStore`, and the graph's checkpoints
go through LangGraph's ``AsyncPostgresSaver`` (:func:`open_postgres_checkpointer`), so any replica
can list a run, follow its events and resume it.

**Thread claims.** A replica runs a thread only while it holds a session-level advisory lock on it
(``pg_try_advisory_lock`` on a hash of the thread id), taken on a connection that the process keeps
for its claims alone. PostgreSQL releases those locks when that connection ends: when the replica is
killed, but also when only the connection is cut (``pg_terminate_backend``, an idle-session
timeout, a proxy, a restart or failover of the server). So a claim is a lease that the replica
must keep proving:

* while it holds claims, it sends ``SELECT 1`` on the claims connection every
  :data:`CLAIM_CHECK_S` seconds; each answer proves the session, and with it every lock taken on
  it, alive when it was sent. A claim counts as held (:meth:`PostgresRunStore.holds`) only until
  :data:`CLAIM_VALID_S` after the last answered check was sent, and not at all once a check fails
  (the claims are given up and the connection opened again);
* each LLM call of a run is preceded by such a check of its own
  (:meth:`PostgresRunStore.confirm`), each write of the run's events and checkpoints by
  :meth:`~PostgresRunStore.holds`, and a run whose claim is no longer held is stopped
  (:class:`~searchain_graph.serve.store.ClaimLostError`) and left stored in flight;
* a replica that takes a claim on a thread that another process may have been running (adopting
  a run, resuming one paused for review) waits :data:`CLAIM_GRACE_S` (longer than
  :data:`CLAIM_VALID_S`) before it reads the thread's checkpoint and runs it. The lock becomes free
  only after the old session ended, after the old holder's last answered check was sent; the old
  holder stops within :data:`CLAIM_VALID_S` of sending it. So the two never run the thread at once.

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
import functools
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

from searchain_graph.serve.store import (
    ClaimLostError,
    SqlRunStore,
    Statement,
    StoreOpenError,
    StoreWriteError,
    Watch,
    error_in_chain,
    shown_url,
)

__all__ = ["PG_SCHEMA", "PostgresRunStore", "fence_checkpoints", "open_postgres_checkpointer"]

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
CLAIM_CHECK_S = 0.5
"""How often a replica that holds claims checks its claims connection (``SELECT 1``)."""
CLAIM_VALID_S = 2.5
"""How long after sending its last answered check a replica counts its claims as held."""
CLAIM_GRACE_S = 4.0
"""How long a replica waits after claiming a thread that another may have run, before running it
(:data:`CLAIM_VALID_S` and a margin for scheduling and the network)."""
CLAIMS_TCP_TIMEOUT_MS = 10_000
"""``tcp_user_timeout`` of the claims connection: a server that stops answering (a network
partition) ends it after this long, rather than the system's quarter of an hour."""
RECONNECT_S = 3.0
"""How long a statement of the store keeps connecting again when its connection is lost (a restart
of the server takes about a second): then it fails."""
RECONNECT_PAUSE_S = 0.2
"""The pause between two attempts to connect again."""
READ_ONLY_STATE = "25006"
"""SQLSTATE ``read_only_sql_transaction``: the database (or its sessions' default) refuses writes."""
LOST_CONNECTION_STATES = ("57P01", "57P02", "57P03", "57P05")
"""SQLSTATEs of a session the server ended (an administrator, a crash or a shutdown, a server
starting, an idle-session timeout); class ``08`` (connection exceptions) counts too."""


HEALTH_WAIT_S = 1.0
"""How long ``/healthz`` waits for the store's connection before saying it is busy (healthy)."""


def _reason(exc: BaseException) -> str:
    """A database error in one line: the server's own message, else the error's first line."""
    primary = getattr(getattr(exc, "diag", None), "message_primary", None)
    if primary:
        return str(primary)
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _refused(exc: BaseException) -> str:
    """Why the database refused a write, in one line: a read-only database says so."""
    if getattr(exc, "sqlstate", None) == READ_ONLY_STATE:
        return f"the database refuses writes (it is read-only: {_reason(exc)})"
    return f"the database refused a write: {_reason(exc)}"


def _lost_connection(exc: BaseException) -> bool:
    """Whether ``exc`` is a connection to the server lost or refused (nothing of the statement's own)."""
    if isinstance(exc, ConnectionError):  # _connect's: the server cannot be reached
        return True
    psycopg = _psycopg()
    if not isinstance(exc, psycopg.OperationalError):
        return False
    state = getattr(exc, "sqlstate", None)
    # No SQLSTATE: the client lost the connection (or psycopg_pool found none in time).
    return state is None or state.startswith("08") or state in LOST_CONNECTION_STATES


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
    claim_grace_s = CLAIM_GRACE_S

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
        self._valid_until = 0.0
        """:func:`time.monotonic` until which the claims count as held (see the module's doc)."""
        self._keeper: threading.Thread | None = None
        psycopg = _psycopg()
        try:
            self._conn = self._connect()
            self._claims_conn = self._connect(claims=True)
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

    def _connect(self, *, claims: bool = False) -> Any:
        psycopg = _psycopg()
        extra = {"tcp_user_timeout": CLAIMS_TCP_TIMEOUT_MS} if claims else {}
        try:
            return psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=max(1, round(self.connect_timeout)),
                prepare_threshold=None,
                **extra,
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
        """One statement; a write the database refuses (down, read-only) raises :class:`StoreWriteError`.

        A lost connection (the server restarted, an idle-session timeout, a proxy) is opened again
        and the statement sent again: one statement is one transaction, and each write is one that
        may be applied twice (an upsert, an insert of an event that keeps the first, a delete). It
        keeps trying for :data:`RECONNECT_S` seconds, the lock given up between tries.
        """
        psycopg = _psycopg()
        deadline = time.monotonic() + RECONNECT_S
        tries = 0
        while True:
            try:
                with self._lock:
                    if self._conn.closed:
                        self._conn = self._connect()
                    try:
                        rows = self._fetch(sql, params)
                    except psycopg.OperationalError as exc:
                        if _lost_connection(exc):
                            self._conn.close()  # whatever psycopg concluded: the next try connects again
                        raise
            except (psycopg.OperationalError, psycopg.errors.ReadOnlySqlTransaction, ConnectionError) as exc:
                lost = _lost_connection(exc)
                if lost and time.monotonic() < deadline and not self._closing.is_set():
                    if tries == 0:
                        where = shown_url(self.url)
                        logger.warning("the connection to %s broke (%s): connecting again", where, _reason(exc))
                    tries += 1
                    if tries > 1:  # the first try at once (a connection ended while idle); then paced
                        time.sleep(RECONNECT_PAUSE_S)
                    continue
                if not write:
                    raise
                self._write_error = _refused(exc)
                raise StoreWriteError(self._write_error, interrupted=lost) from None
            if write:
                self._write_error = None
            return rows

    def interrupted(self, exc: BaseException) -> bool:
        """Whether ``exc``, or an error it came from, is a connection to the database lost or refused."""
        seen: set[int] = set()
        current: BaseException | None = exc
        while current is not None and id(current) not in seen:
            seen.add(id(current))
            if isinstance(current, StoreWriteError):
                return current.interrupted
            if not isinstance(current, ConnectionError) and _lost_connection(current):
                return True
            current = current.__cause__ or current.__context__
        return False

    def refusal(self, exc: BaseException) -> str | None:
        """Why the database refused what ``exc`` was writing (the store's writes, the checkpointer's), or None.

        A read-only database (SQLSTATE 25006) refuses until someone makes it writable again: the
        run fails. A lost connection is no refusal: the run stops in flight, to be resumed.
        """
        refused = super().refusal(exc)
        if refused is None:
            read_only = error_in_chain(exc, _psycopg().errors.ReadOnlySqlTransaction)
            refused = None if read_only is None else _refused(read_only)
        return refused

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
            if _lost_connection(exc):
                self._conn.close()  # the next statement connects again
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

    def wake(self, run_id: str | None) -> None:
        """Set this process's watches on ``run_id`` (on every run for None), each on its own event loop."""
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
                self.wake(None)  # changes made while nobody listened are read now
                while not self._closing.is_set():
                    for note in conn.notifies(timeout=0.5):
                        self.wake(note.payload)
            except Exception:  # noqa: BLE001 - a lost connection: listen again on a new one
                if not self._closing.is_set():
                    logger.warning("the listening connection to %s broke: connecting again", shown_url(self.url))
                    self._closing.wait(LISTEN_RETRY_S)
            finally:
                with contextlib.suppress(Exception):
                    conn.close()

    def holds(self, thread_id: str) -> bool:
        """Whether ``thread_id`` is claimed here, its connection's last check sent under :data:`CLAIM_VALID_S` ago.

        No round trip: the last answer of the keeper thread's checks (or of :meth:`confirm`).
        """
        return thread_id in self._claims and time.monotonic() < self._valid_until

    def confirm(self, thread_id: str) -> None:
        """Check the claims connection now (a round trip) and that ``thread_id`` is claimed on it.

        Raises:
            ClaimLostError: it is not claimed here, or the connection (and with it the claim) is gone.
        """
        with self._claims_lock:
            if thread_id not in self._claims or not self._check() or thread_id not in self._claims:
                raise ClaimLostError(f"this replica no longer holds the claim on thread {thread_id}")

    def _check(self) -> bool:
        """``SELECT 1`` on the claims connection (claims lock held); False, the claims given up, when it fails.

        An answer keeps the claims held for :data:`CLAIM_VALID_S` from the check's sending.
        """
        psycopg = _psycopg()
        sent = time.monotonic()
        try:
            if self._claims_conn.closed:
                raise ConnectionError("the claims connection is closed")
            self._claims_conn.execute("SELECT 1")
        except (psycopg.Error, ConnectionError) as exc:
            self._lose_claims(_reason(exc))
            return False
        self._valid_until = sent + CLAIM_VALID_S
        return True

    def _lose_claims(self, reason: str) -> None:
        """The claims connection is gone, and the server gave up its claims: forget them (claims lock held)."""
        if self._claims:
            logger.warning(
                "the claims connection to %s was lost (%s): %d claim(s) given up, their runs stop here and "
                "resume where they are claimed next",
                shown_url(self.url),
                reason,
                len(self._claims),
            )
        self._claims.clear()
        self._valid_until = 0.0
        with contextlib.suppress(Exception):
            self._claims_conn.close()

    def _keep_claims(self) -> None:
        """The keeper thread: while claims are held, check the claims connection every :data:`CLAIM_CHECK_S`."""
        while not self._closing.wait(CLAIM_CHECK_S):
            with self._claims_lock:
                if self._claims:
                    self._check()

    def _take(self, thread_id: str) -> bool:
        """Take the advisory lock of ``thread_id``; False when another process holds it.

        A claims connection found lost is opened again (its claims given up, as the server did),
        and the lock asked for on the new one.

        Raises:
            StoreWriteError: the database cannot be reached.
        """
        psycopg = _psycopg()
        if self._keeper is None:
            self._keeper = threading.Thread(target=self._keep_claims, name="searchain-claims", daemon=True)
            self._keeper.start()
        retried = False
        while True:
            try:
                return self._try_lock(thread_id)
            except (psycopg.Error, ConnectionError) as exc:
                lost = _lost_connection(exc)
                if retried or not lost:
                    why = f"the database cannot take a claim: {_reason(exc)}"
                    raise StoreWriteError(why, interrupted=lost) from None
                retried = True
                self._lose_claims(_reason(exc))  # an idle-session timeout, say: asked again on a new connection

    def _try_lock(self, thread_id: str) -> bool:
        """``pg_try_advisory_lock`` on the claims connection (opened again when closed); an answer renews the claims."""
        sent = time.monotonic()
        if self._claims_conn.closed:
            self._lose_claims("closed")
            self._claims_conn = self._connect(claims=True)
        row = self._claims_conn.execute(
            "SELECT pg_try_advisory_lock(hashtextextended(%s, %s))", (thread_id, CLAIM_SEED)
        ).fetchone()
        self._valid_until = sent + CLAIM_VALID_S
        return bool(row and row[0])

    def _give_up(self, thread_id: str) -> None:
        """Give up the advisory lock of ``thread_id`` (a lost connection has given it up already)."""
        psycopg = _psycopg()
        if self._claims_conn.closed:
            return
        try:
            self._claims_conn.execute("SELECT pg_advisory_unlock(hashtextextended(%s, %s))", (thread_id, CLAIM_SEED))
        except psycopg.Error as exc:
            self._lose_claims(_reason(exc))  # the connection is gone, and every claim with it

    def close(self) -> None:
        """Close the connections (the server releases every claim still held) and stop the listener."""
        self._closing.set()
        for thread in (self._listener, self._keeper):
            if thread is not None:
                thread.join(timeout=5)
        with self._lock, self._claims_lock:
            self._claims.clear()
            for conn in (self._conn, self._claims_conn):
                if not conn.closed:
                    conn.close()


async def _try_setup_lock(conn: Any) -> bool:
    row = await (await conn.execute("SELECT pg_try_advisory_lock(%s) AS held", (SETUP_LOCK,))).fetchone()
    return bool(row and row["held"])


@functools.cache
def _saver_class() -> Any:
    """``AsyncPostgresSaver`` that sends a call again on a lost connection, writing only the threads its fence allows.

    Its fence: :func:`fence_checkpoints`.
    """
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg_pool import PoolTimeout

    psycopg = _psycopg()

    class ClaimedPostgresSaver(AsyncPostgresSaver):
        fence: Callable[[str], bool] | None = None
        """Whether this process holds the claim on a thread (:meth:`PostgresRunStore.holds`); None: no fence."""

        def _fenced(self, config: Any) -> None:
            thread_id = str((config.get("configurable") or {}).get("thread_id", ""))
            if self.fence is not None and not self.fence(thread_id):
                why = f"this replica no longer holds the claim on thread {thread_id}: its checkpoint is not written"
                raise ClaimLostError(why)

        async def _again(self, call: Callable[[], Awaitable[Any]]) -> Any:
            """``call()``, sent again while the pooled connection it got turns out lost.

            Lost: ended by the server while idle, or by a restart; each pooled connection is tried at
            most once. Every call here may be applied twice (reads, upserts of checkpoints and writes).
            """
            tries = int(getattr(self.conn, "max_size", 1) or 1) + 1
            attempt = 1
            while True:
                try:
                    return await call()
                except psycopg.OperationalError as exc:
                    if attempt >= tries or isinstance(exc, PoolTimeout) or not _lost_connection(exc):
                        raise
                    attempt += 1

        async def aget_tuple(self, config: Any) -> Any:
            return await self._again(lambda: super(ClaimedPostgresSaver, self).aget_tuple(config))

        async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
            async def put() -> Any:
                self._fenced(config)
                return await super(ClaimedPostgresSaver, self).aput(config, checkpoint, metadata, new_versions)

            return await self._again(put)

        async def aput_writes(self, config: Any, writes: Any, task_id: str, task_path: str = "") -> None:
            async def put() -> None:
                self._fenced(config)
                await super(ClaimedPostgresSaver, self).aput_writes(config, writes, task_id, task_path)

            await self._again(put)

        async def adelete_thread(self, thread_id: str) -> None:
            await self._again(lambda: super(ClaimedPostgresSaver, self).adelete_thread(thread_id))

    return ClaimedPostgresSaver


def fence_checkpoints(saver: Any, holds: Callable[[str], bool]) -> None:
    """Make a saver of :func:`open_postgres_checkpointer` write a thread's checkpoints only while ``holds(thread_id)``.

    A replica that lost a claim then writes nothing more to the thread, whatever step it was in.
    """
    saver.fence = holds


async def open_postgres_checkpointer(url: str, *, max_size: int = 10) -> tuple[Any, Any]:
    """LangGraph's ``AsyncPostgresSaver`` on a pool of connections to ``url``, its tables set up.

    Replicas starting together set the tables up one at a time (an advisory lock). A call that
    finds its pooled connection ended by the server (an idle-session timeout, a restart) is sent
    again on another, rather than failing the run: the pool drops the lost one. (The pool's own
    check before each use, ``check_connection``, waits a second and more between tries, which a
    connection idle in the pool for that long fails again under a one-second idle timeout.)
    :func:`fence_checkpoints` ties its writes to the claims of a store.

    Args:
        url: The ``postgresql://`` URL.
        max_size: The pool's connections at most (runs at once, plus a few).

    Returns:
        The saver and the pool, which the caller closes (``await pool.close()``) when done.

    Raises:
        ImportError: ``langgraph-checkpoint-postgres`` or ``psycopg-pool`` is not installed.
    """
    try:
        from psycopg.rows import dict_row
        from psycopg_pool import AsyncConnectionPool

        saver_class = _saver_class()
    except ImportError as exc:
        need = 'pip install "searchain-graph[postgres]"'
        raise ImportError(f"--db postgresql://... needs langgraph-checkpoint-postgres: {need} ({exc})") from exc
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}
    pool: Any = AsyncConnectionPool(url, min_size=1, max_size=max(2, max_size), kwargs=kwargs, open=False)
    await pool.open(wait=True, timeout=30)
    saver = saver_class(pool)
    async with pool.connection() as conn:
        while not await _try_setup_lock(conn):
            await asyncio.sleep(SETUP_POLL_S)  # polled: see PostgresRunStore._setup_lock
        try:
            await saver.setup()
        finally:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (SETUP_LOCK,))
    return saver, pool
