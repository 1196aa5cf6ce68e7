"""How ``searchain serve`` gets back the runs that were in flight when a server stopped.

:class:`Recovery` is the part of :class:`~searchain_graph.serve.runs.RunManager` that reads a durable
store at start (:meth:`Recovery.restore`) and, with a store shared by replicas, takes over the runs
of a replica that died (:meth:`Recovery.adopt`, every few seconds with :meth:`Recovery.adopt_every`).
A run is only ever resumed by the process that holds its thread's claim
(:meth:`~searchain_graph.serve.store.RunStore.claim`): PostgreSQL releases a dead replica's claims
with its connection, so each orphaned run is taken by exactly one replica.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from langgraph.graph.state import CompiledStateGraph

from searchain_graph.method.state import OUTPUT_KEYS
from searchain_graph.serve.run import MAX_ERROR_CHARS, Run, tree_fragment
from searchain_graph.serve.store import RunStore, StoreWriteError

__all__ = ["Recovery"]

logger = logging.getLogger(__name__)


class Recovery:
    """Restoring, adopting and recovering runs; mixed into :class:`~searchain_graph.serve.runs.RunManager`."""

    graph: CompiledStateGraph[Any, Any, Any, Any]
    store: RunStore
    keep: int
    max_waiting: int
    closing: bool
    _runs: dict[str, Run]

    async def _emit(
        self, run: Run, event: str, data: Mapping[str, Any], status: str | None = None, *, persist: bool = True
    ) -> None:
        raise NotImplementedError

    async def _execute(self, run: Run, *, resume: bool = False, decision: object = None) -> None:
        raise NotImplementedError

    async def restore(self) -> list[Run]:
        """Read the stored runs back (at start): list the finished ones, resume or fail the others.

        A run stored as ``queued`` or ``running`` was in flight when the process stopped. When the
        graph's checkpointer holds its thread with steps still to run, it resumes from that
        checkpoint; when the thread is complete, the run is finished from its state; when no
        checkpoint was written, it starts again from its question (nothing was done that could be
        lost). A run that cannot be read back is marked failed, with the reason. Every run not
        finished is read back, however old (one paused for review waits for its decision as
        before); of the finished ones, the newest ``keep``. With a shared store (PostgreSQL), only
        the runs whose thread no live replica holds are taken (:meth:`adopt`); the others are read
        from the store when asked for.

        Returns:
            The runs that were in flight, now resumed, finished or failed.
        """
        if self.store.shared:
            return await self.adopt()
        recovered = []
        for stored in await asyncio.to_thread(self.store.load, self.keep):
            run = Run.from_stored(stored)
            self._runs[run.id] = run
            if run.status == "review" and run.review is not None:
                continue  # paused for a person, with its checkpoint: it waits as before
            if not run.finished and await asyncio.to_thread(self.store.claim, run.thread_id):
                recovered.append(run)
                await self._recover(run)
        return recovered

    async def adopt(self) -> list[Run]:
        """Take the runs stored in flight whose thread no process holds (their server died), and recover them.

        Each is claimed first (:meth:`~searchain_graph.serve.store.RunStore.claim`), then read again:
        a run that another replica finished or paused meanwhile is left alone.

        Returns:
            The runs taken: resumed, finished from their state, or failed.
        """
        adopted = []
        for row in await asyncio.to_thread(self.store.in_flight):
            local = self._runs.get(row.id)
            if self.closing or (local is not None and local.live):
                continue
            if not await asyncio.to_thread(self.store.claim, row.thread_id):
                continue  # a live process runs it
            stored = await asyncio.to_thread(self.store.get, row.id)
            if stored is None or stored.status not in ("queued", "running"):
                await self._release(row.thread_id)
                continue
            run = Run.from_stored(stored)
            self._runs[run.id] = run
            adopted.append(run)
            await self._recover(run)
        return adopted

    async def adopt_every(self, seconds: float) -> None:
        """:meth:`adopt` every ``seconds`` until cancelled: a replica takes over the runs of one that died."""
        while not self.closing:
            await asyncio.sleep(seconds)
            try:
                taken = await self.adopt()
            except Exception:  # noqa: BLE001 - a failed scan is retried at the next one
                logger.warning("could not look for orphaned runs", exc_info=True)
                continue
            if taken:
                logger.warning("took over %d run(s) whose server stopped", len(taken))

    async def _recover(self, run: Run) -> None:
        """Resume, finish or fail ``run``, whose thread this process has claimed."""
        config: Any = {"configurable": {"thread_id": run.thread_id}}
        try:
            snapshot = await self.graph.aget_state(config) if self.graph.checkpointer is not None else None
        except Exception as exc:  # noqa: BLE001 - an unreadable checkpoint fails the run, with the reason
            run.error = f"the server stopped mid-run and its checkpoint could not be read: {type(exc).__name__}: {exc}"
            await self._emit(run, "failed", {"error": run.error[:MAX_ERROR_CHARS]}, "error")
            await self._release(run.thread_id)
            return
        values = dict(snapshot.values) if snapshot is not None and snapshot.values else {}
        # Finished only with no task left at all: a step whose tasks wrote their results but whose
        # checkpoint the kill prevented has no "next" either, and its values lack those results
        # (the run would be "done" with an empty answer); resuming applies them and finishes.
        if snapshot is not None and values and not snapshot.next and not snapshot.tasks:
            run.output = {k: values[k] for k in OUTPUT_KEYS if k in values}
            await self._emit(run, "done", {"answer": values.get("answer"), "html": tree_fragment(values)}, "done")
            await self._release(run.thread_id)
            return
        resume = bool(values)
        note = "resumed from its last checkpoint after a restart" if resume else "restarted from its question"
        try:
            await self._emit(run, "update", {"progress": note}, "queued")
        except StoreWriteError as exc:  # disk full, say: it stays stored in flight, for the next start
            run.error = f"could not be resumed: {exc}"
            await self._emit(run, "failed", {"error": run.error}, "error", persist=False)
            await self._release(run.thread_id)
            return
        run.task = asyncio.create_task(self._execute(run, resume=resume), name=f"searchain run {run.id}")

    async def _release(self, thread_id: str) -> None:
        try:
            await asyncio.to_thread(self.store.release, thread_id)
        except asyncio.CancelledError:
            self.store.release(thread_id)  # shutting down: still given up, so another replica can take it
            raise
        except Exception:  # noqa: BLE001 - a claim that cannot be given up ends with the connection
            logger.warning("could not release the claim on thread %s", thread_id, exc_info=True)
