"""The event loop during ``ainvoke``: a step body's own work runs in a worker thread."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from searchain_graph import create_searchain_graph
from tests.fakes import QUESTION, TREE_READS, ScriptedReader, retriever, tree_llm


async def test_a_step_bodys_own_work_runs_off_the_event_loop() -> None:
    """A slow duplicate check (an encoder loading, say) never stalls the loop during ``ainvoke``."""

    def slow_matcher(query: str, processed: Sequence[str]) -> bool:
        time.sleep(0.6)  # as a model loading on first use would
        return query.strip().lower() in {p.strip().lower() for p in processed}

    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), is_duplicate=slow_matcher)
    gaps: list[float] = []
    done = asyncio.Event()

    async def heartbeat() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    out = await graph.ainvoke({"question": QUESTION})
    done.set()
    await beat
    assert out["rounds"] == 3 and out["answer"] == "Toronto Coach Terminal"
    assert max(gaps) < 0.5, f"the loop stalled for {max(gaps):.3f} s"  # on the loop, each check would stall it 0.6 s
