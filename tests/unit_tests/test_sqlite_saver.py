"""A task's writes reach ``searchain serve --db FILE``'s checkpoints whole or not at all (AtomicSqliteSaver).

The defect it mends: in autocommit, LangGraph's SQLite saver stored a task's writes one statement
each, and a server killed between two of them resumed a run from part of a step's writes and
ended it "done" with an empty answer. A trigger that refuses one write stands in for the kill.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("langgraph.checkpoint.sqlite")

from langgraph.checkpoint.base import empty_checkpoint  # noqa: E402
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: E402

from searchain_graph.serve.sqlite_store import open_sqlite_checkpointer  # noqa: E402

WRITES = [("messages", [{"role": "assistant", "content": "[Query 1]: Who?"}]), ("chain", [1, 2]), ("boom", 1)]
REFUSE = (
    "CREATE TRIGGER refuse BEFORE INSERT ON writes WHEN NEW.channel = 'boom' BEGIN SELECT RAISE(ABORT, 'refused'); END"
)


async def _saver_with_checkpoint(db: Path) -> tuple[Any, Any]:
    saver = await open_sqlite_checkpointer(db)
    base: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    config = await saver.aput(base, empty_checkpoint(), {"source": "loop", "step": 0}, {})
    return saver, config


def _rows(db: Path) -> list[tuple[str, str]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT task_id, channel FROM writes ORDER BY task_id, idx").fetchall()


def test_a_task_whose_writes_fail_midway_leaves_none_of_them(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"

    async def scenario() -> None:
        saver, config = await _saver_with_checkpoint(db)
        await saver.conn.execute(REFUSE)
        with pytest.raises(sqlite3.IntegrityError, match="refused"):
            await saver.aput_writes(config, WRITES, "task-1")
        assert not saver.conn.in_transaction
        await saver.aput_writes(config, WRITES[:2], "task-2")  # the file is not left locked
        stored = await saver.aget_tuple(config)
        assert stored is not None
        assert [(t, c) for t, c, _ in stored.pending_writes] == [("task-2", "messages"), ("task-2", "chain")]
        assert stored.pending_writes[0][2] == WRITES[0][1]
        await saver.conn.close()

    asyncio.run(scenario())
    assert _rows(db) == [("task-2", "messages"), ("task-2", "chain")]


def test_langgraphs_own_saver_in_autocommit_kept_part_of_them(tmp_path: Path) -> None:
    """The failure above, with the saver this replaced: the test sees the defect it guards against."""
    db = tmp_path / "serve.db"

    async def scenario() -> None:
        saver, config = await _saver_with_checkpoint(db)
        plain = AsyncSqliteSaver(saver.conn)
        await saver.conn.execute(REFUSE)
        with pytest.raises(sqlite3.IntegrityError):
            await plain.aput_writes(config, WRITES, "task-1")
        await saver.conn.close()

    asyncio.run(scenario())
    assert _rows(db) == [("task-1", "messages"), ("task-1", "chain")]


def test_a_cancelled_write_is_stored_whole_and_leaves_no_transaction_open(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"

    async def scenario() -> None:
        saver, config = await _saver_with_checkpoint(db)
        many = [(f"channel{i}", "x" * 1000) for i in range(200)]
        for delay in (0.0, 0.001, 0.005):
            task = asyncio.create_task(saver.aput_writes(config, many, f"task-{delay}"))
            await asyncio.sleep(delay)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await saver.aput_writes(config, WRITES[:1], "task-after")
        await asyncio.sleep(0.2)  # the shielded writes finish on their own
        assert not saver.conn.in_transaction
        await saver.conn.close()

    asyncio.run(scenario())
    counts: dict[str, int] = {}
    for task_id, _ in _rows(db):
        counts[task_id] = counts.get(task_id, 0) + 1
    assert counts.pop("task-after") == 1
    assert all(n == 200 for n in counts.values()), counts  # each cancelled task: all its writes or none
