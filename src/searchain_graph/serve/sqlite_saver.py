"""LangGraph's SQLite checkpointer with each task's writes stored whole: :class:`AtomicSqliteSaver`.

``searchain serve --db FILE`` keeps the graph's checkpoints in the run store's file, on a connection
in autocommit (each statement its own transaction; see
:func:`~searchain_graph.serve.sqlite_store.open_sqlite_checkpointer`).
There, ``AsyncSqliteSaver.aput_writes`` inserts a task's writes one statement each, so a process
killed between two of them left part of a task's writes. On resume, LangGraph takes a task with
writes for a task that finished, hands back the part it finds and does not run it again: a
``coq_generation`` step that kept only its ``messages`` ended the run there, "done" with an empty
answer (1 run in 3 of the ten-kill test). Here the writes of one task go in one transaction,
whole or not at all, and a cancelled caller cannot leave that transaction open.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import WRITES_IDX_MAP
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

__all__ = ["AtomicSqliteSaver"]

_COLUMNS = "thread_id, checkpoint_ns, checkpoint_id, task_id, task_path, idx, channel, type, value"


class AtomicSqliteSaver(AsyncSqliteSaver):
    """``AsyncSqliteSaver`` whose :meth:`aput_writes` stores a task's writes in one transaction.

    The connection must be in autocommit (``isolation_level=None``): the transaction is begun and
    ended here, under the saver's lock, so no other statement of the saver joins it.
    """

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store the writes of task ``task_id`` on the checkpoint ``config`` names: all of them, or none.

        As LangGraph's savers do, writes to its special channels (errors, interrupts, resume values)
        replace earlier ones with the same index; other writes of a task already stored are kept.
        The transaction runs to its end even when the caller is cancelled meanwhile.
        """
        conf = config["configurable"]
        rows = [
            (
                str(conf["thread_id"]),
                str(conf["checkpoint_ns"]),
                str(conf["checkpoint_id"]),
                task_id,
                task_path,
                WRITES_IDX_MAP.get(channel, position),
                channel,
                *self.serde.dumps_typed(value),
            )
            for position, (channel, value) in enumerate(writes)
        ]
        conflict = "REPLACE" if all(channel in WRITES_IDX_MAP for channel, _ in writes) else "IGNORE"
        statement = f"INSERT OR {conflict} INTO writes ({_COLUMNS}) VALUES ({', '.join('?' * 9)})"
        await self.setup()
        await asyncio.shield(self._insert_all(statement, rows))

    async def _insert_all(self, statement: str, rows: list[tuple[Any, ...]]) -> None:
        async with self.lock:
            try:
                await self.conn.execute("BEGIN IMMEDIATE")
                await self.conn.executemany(statement, rows)
            except BaseException:
                # The connection runs its statements in order: this comes after whatever was sent.
                with contextlib.suppress(sqlite3.Error):
                    await self.conn.execute("ROLLBACK")
                raise
            await self.conn.execute("COMMIT")
