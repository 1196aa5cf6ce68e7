"""Opening what ``searchain serve --db`` names: a SQLite file or a PostgreSQL URL (or nothing: memory).

:func:`open_run_store` gives the store of runs and events, :func:`open_checkpointer` the graph's
checkpointer on the same database.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from searchain_graph.serve.postgres import PostgresRunStore, open_postgres_checkpointer
from searchain_graph.serve.sqlite_store import SqliteRunStore, open_sqlite_checkpointer
from searchain_graph.serve.store import RunStore, is_postgres_url, shown_url

__all__ = ["open_checkpointer", "open_run_store"]


def open_run_store(db: str | Path | None) -> RunStore:
    """The store for ``searchain serve --db``: SQLite for a path, PostgreSQL for a URL, in memory for None.

    Raises:
        ValueError: ``db`` is a URL of another database.
        StoreOpenError: a SQLite file that cannot be used, or that another server holds (a ``ValueError``).
        ImportError: a PostgreSQL URL without ``langgraph-checkpoint-postgres`` installed.
    """
    if db is None:
        return RunStore()
    text = str(db)
    if is_postgres_url(text):
        return PostgresRunStore(text)
    if "://" in text:
        raise ValueError(f"--db {shown_url(text)}: a SQLite file path or a postgresql:// URL is needed")
    return SqliteRunStore(text)


async def open_checkpointer(db: str | Path, *, max_size: int = 10) -> tuple[Any, Callable[[], Awaitable[None]]]:
    """The graph's checkpointer for ``--db`` (SQLite or PostgreSQL) and how to close it.

    Raises:
        ImportError: the database's LangGraph checkpointer is not installed.
    """
    if is_postgres_url(str(db)):
        saver, pool = await open_postgres_checkpointer(str(db), max_size=max_size)
        return saver, pool.close
    saver = await open_sqlite_checkpointer(db)
    return saver, saver.conn.close
