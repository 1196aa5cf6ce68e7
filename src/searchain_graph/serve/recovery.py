"""How ``searchain serve`` gets back the runs that were in flight when a server stopped.

:class:`Recovery` is the part of :class:`~searchain_graph.serve.runs.RunManager` that reads a durable
store at start (:meth:`Recovery.restore`) and, with a store shared by replicas, takes over the runs
of a replica that died (:meth:`Recovery.adopt`, every few seconds with :meth:`Recovery.adopt_every`).
A run is only ever resumed by the process that holds its thread's claim
(:meth:`~searchain_graph.serve.store.RunStore.claim`): PostgreSQL releases a dead replica's claims
with its connection, so each orphaned run is taken by exactly one replica.

A claim is also lost while its replica lives, when only its connection is cut
(:mod:`~searchain_graph.serve.postgres`). So with a shared store a run goes on only while its
process holds the claim (:meth:`Recovery._while_claimed`): checked before each LLM call (a round
trip) and before each write, watched meanwhile; once lost, the run stops where it is, stored in
flight. A run cut off by the database itself (a restart, a lost connection) is stopped the same
way rather than failed. Whichever replica claims it next resumes it from its last checkpoint, after
the claim's grace (:attr:`~searchain_graph.serve.store.RunStore.claim_grace_s`), by which time the
replica that lost it has stopped.

A database that refuses writes (read-only) is no such interruption: the run fails. Its end, which
the store refused too, is held by its replica (:meth:`Recovery._hold_end`), the claim kept, until
the store takes it (:meth:`Recovery._store_held`); meanwhile no replica adopts any run.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import BaseMessage
from langgraph.graph.state import CompiledStateGraph

from searchain_graph.method.state import OUTPUT_KEYS
from searchain_graph.serve.run import MAX_ERROR_CHARS, Run, tree_fragment
from searchain_graph.serve.store import ClaimLostError, RunStore, StoreWriteError, error_in_chain

__all__ = ["Recovery"]

logger = logging.getLogger(__name__)

CLAIM_WATCH_S = 0.25
"""How often a run on a shared store looks whether its process still holds its thread's claim."""
CLAIM_LOST = (
    "this replica lost its claim on the run's thread (its connection to the database was cut); the run "
    "resumes from its last checkpoint on the replica that claims it next"
)
"""What the readers of a run stopped for a lost claim are told by this replica."""


class ClaimCheck(BaseCallbackHandler):
    """Before each LLM call of a run, the claim on its thread is confirmed (a round trip): else the call is not made.

    A callback of the run's config, which LangChain passes to every model call in the run. Its
    methods are synchronous: LangChain runs them in its executor for a call made from the event
    loop (``ainvoke``), and inline for one made in a thread (``invoke``, a reader's model), where an
    asynchronous handler's error would be logged and the call made all the same. ``raise_error``:
    the :class:`~searchain_graph.serve.store.ClaimLostError` reaches the call, which is not made;
    LangChain's warning for it (``Error in ClaimCheck.on_chat_model_start callback``) is left out
    of the log (:class:`QuietRefusals`): the run says why it stopped.
    """

    raise_error = True

    def __init__(self, store: RunStore, thread_id: str) -> None:
        self.store = store
        self.thread_id = thread_id
        logging.getLogger(CALLBACKS_LOGGER).addFilter(QUIET_REFUSALS)  # once: the same filter is added once

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.store.confirm(self.thread_id)

    def on_llm_start(self, serialized: dict[str, Any], prompts: list[str], **kwargs: Any) -> None:
        self.store.confirm(self.thread_id)


class QuietRefusals(logging.Filter):
    """Leaves out LangChain's warning for a :class:`ClaimCheck` that refused a call (the refusal it is there for)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        refused = len(args) == 3 and args[0] == ClaimCheck.__name__ and ClaimLostError.__name__ in str(args[2])
        return not refused


CALLBACKS_LOGGER = "langchain_core.callbacks.manager"
"""The logger of LangChain's callback manager, which warns of every error a callback raises."""
QUIET_REFUSALS = QuietRefusals()


class Recovery:
    """Restoring, adopting and recovering runs; mixed into :class:`~searchain_graph.serve.runs.RunManager`."""

    graph: CompiledStateGraph[Any, Any, Any, Any]
    store: RunStore
    keep: int
    max_waiting: int
    closing: bool
    _runs: dict[str, Run]
    _held: dict[str, Run]
    """The runs whose end the shared store refused (read-only): kept here, their claims held, until written."""

    async def _emit(
        self, run: Run, event: str, data: Mapping[str, Any], status: str | None = None, *, persist: bool = True
    ) -> None:
        raise NotImplementedError

    async def _execute(self, run: Run, *, resume: bool = False, decision: object = None, settle: bool = False) -> None:
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

        Each is claimed first (:meth:`~searchain_graph.serve.store.RunStore.claim`); then, the
        claim's grace passed (a replica that lost the claim has stopped by then), each is read
        again: a run that another replica finished or paused meanwhile is left alone. None is taken
        while the store is unhealthy (a read-only database, one out of reach): it could not go on,
        and would be handed back at once, at every scan.

        Returns:
            The runs taken: resumed, finished from their state, or failed.
        """
        if await asyncio.to_thread(self.store.health) is not None:
            return []  # the database refuses writes or is out of reach: a run taken up could not go on
        claimed = []
        for row in await asyncio.to_thread(self.store.in_flight):
            local = self._runs.get(row.id)
            if self.closing or (local is not None and local.live):
                continue
            if await asyncio.to_thread(self.store.claim, row.thread_id):
                claimed.append(row)  # else a live process runs it
        adopted = []
        handled = 0  # the claims before this one are handed on (to a run) or given up
        try:
            if claimed and self.store.claim_grace_s > 0:
                await asyncio.sleep(self.store.claim_grace_s)
            for row in claimed:
                stored = None
                if not self.closing and self.store.holds(row.thread_id):
                    stored = await asyncio.to_thread(self.store.get, row.id)
                handled += 1
                if stored is None or stored.status not in ("queued", "running"):
                    await self._release(row.thread_id)
                    continue
                run = Run.from_stored(stored)
                self._runs[run.id] = run
                adopted.append(run)
                await self._recover(run)
        finally:
            for row in claimed[handled:]:  # cancelled (shutting down) or failed: given up
                await self._release(row.thread_id)
        return adopted

    async def adopt_every(self, seconds: float) -> None:
        """:meth:`adopt` at once, then every ``seconds`` until cancelled: a replica takes over the runs of others.

        Each time, the ends this replica holds unstored are written first, if the store takes them
        (:meth:`_store_held`).
        """
        while not self.closing:
            await self._store_held()
            try:
                taken = await self.adopt()
            except Exception:  # noqa: BLE001 - a failed scan is retried at the next one
                logger.warning("could not look for orphaned runs", exc_info=True)
            else:
                if taken:
                    logger.warning("took over %d run(s) whose server stopped", len(taken))
            await asyncio.sleep(seconds)

    def _hold_end(self, run: Run) -> bool:
        """Whether this process now holds the end of ``run``, which a shared store refused to write (read-only).

        The run ended here (done, failed, or paused for review) and its readers here are told, but
        its row still says it is in flight. So its thread's claim is kept: no replica takes it up,
        and this one shows the run as it ended, until :meth:`_store_held` writes it.
        """
        ended = run.status in ("done", "error", "review") and bool(run.unstored) and run.events[-1] is run.unstored[-1]
        if not (self.store.shared and ended and self.store.holds(run.thread_id)):
            return False
        self._held[run.id] = run
        self.store.wake(run.id)  # its followers here read the end from memory now
        logger.warning("run %s: its end is kept here, its claim held, until the database takes writes again", run.id)
        return True

    async def _store_held(self) -> None:
        """Write the ends held here (:meth:`_hold_end`) if the store takes them now; each run's claim then given up.

        One whose claim was lost meanwhile (its connection cut) is dropped, unwritten: whoever claims
        it next resumes it.
        """
        for run in list(self._held.values()):
            if not self.store.holds(run.thread_id):
                del self._held[run.id]
                logger.warning("run %s: its claim was lost before its end was stored; it resumes where claimed", run.id)
                continue
            try:
                await asyncio.to_thread(self._write_unstored, run)
            except Exception as exc:  # noqa: BLE001 - still refused, or out of reach: tried again at the next scan
                if self.store.refusal(exc) is None and not self.store.interrupted(exc):
                    logger.warning("run %s: its end could not be stored", run.id, exc_info=True)
                continue
            del self._held[run.id]
            logger.warning("run %s: its end is stored, the database taking writes again", run.id)
            await self._release(run.thread_id)

    def _write_unstored(self, run: Run) -> None:
        """Write the events of ``run`` the store refused, in order, the run's row with the last (off the loop)."""
        while run.unstored:
            last = len(run.unstored) == 1
            self.store.record(run.id, run.unstored[0], run.stored() if last else None)
            run.unstored.pop(0)

    async def _settled(self, run: Run) -> bool:
        """Wait the claim's grace on a run paused for review, then whether it still waits for a decision.

        Another replica that lost the claim while resuming it has stopped by then; had it stored
        the run as resumed, the decision taken here is dropped (the run resumes where it is claimed next).
        """
        await asyncio.sleep(self.store.claim_grace_s)
        stored = await asyncio.to_thread(self.store.get_row, run.id)
        if stored is not None and stored.status == "review":
            return True
        logger.warning("run %s was taken up by another replica meanwhile: this decision is dropped", run.id)
        run.status = stored.status if stored is not None else "error"
        return False

    def _claim_checks(self, run: Run) -> dict[str, Any]:
        """What a run's config adds: with a shared store, a :class:`ClaimCheck` before each LLM call."""
        return {"callbacks": [ClaimCheck(self.store, run.thread_id)]} if self.store.shared else {}

    async def _while_claimed(self, run: Run, work: Coroutine[Any, Any, None]) -> None:
        """Await ``work``, the run's steps; with a shared store, stop it once the claim on its thread is not held.

        Raises:
            ClaimLostError: the claim was lost (``work`` is cancelled).
        """
        if not self.store.shared:
            await work
            return
        task = asyncio.ensure_future(work)
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=CLAIM_WATCH_S)
                if not task.done() and not self.store.holds(run.thread_id):
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
                    raise ClaimLostError(f"this replica no longer holds the claim on thread {run.thread_id}")
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            raise
        task.result()

    async def _left_in_flight(self, run: Run, exc: BaseException) -> bool:
        """Whether a run that failed with ``exc`` rather stops here, stored in flight, for whoever claims it next.

        With a shared store: when the claim on its thread is lost (``exc`` says so, or a round trip
        on the claims connection finds it gone), or when ``exc`` is the database out of reach (a
        restart, a lost connection). Readers here are told; nothing more is stored.
        """
        if not self.store.shared:
            return False
        lost = error_in_chain(exc, ClaimLostError) is not None or self.store.interrupted(exc)
        if not lost:
            try:
                await asyncio.to_thread(self.store.confirm, run.thread_id)
            except ClaimLostError:
                lost = True
        if not lost:
            return False
        logger.warning("run %s stops here, stored in flight, to be resumed where it is claimed next: %s", run.id, exc)
        run.status = "error"
        await self._emit(run, "failed", {"error": CLAIM_LOST}, persist=False)
        return True

    async def _recover(self, run: Run) -> None:
        """Resume, finish or fail ``run``, whose thread this process has claimed."""
        config: Any = {"configurable": {"thread_id": run.thread_id}}
        try:
            snapshot = await self.graph.aget_state(config) if self.graph.checkpointer is not None else None
        except Exception as exc:  # noqa: BLE001 - an unreadable checkpoint fails the run, with the reason
            if self.store.interrupted(exc):  # the database out of reach: taken up again at the next scan
                logger.warning("run %s: its checkpoint cannot be read now (%s): left for later", run.id, exc)
                await self._release(run.thread_id)
                return
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
