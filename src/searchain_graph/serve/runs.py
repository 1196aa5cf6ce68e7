"""Runs of the graph behind ``searchain serve``: each question a task, its progress a list of events.

A :class:`RunManager` starts each question as an asyncio task that streams the graph
(``stream_mode=["updates", "values", "custom"]``) under its own thread id, and records one event per
step: the progress line of the ``updates`` chunk and the tree drawn from the state so far
(:func:`~searchain_graph.viz.render_tree`, ``"fragment"``); and one ``verdict`` event per IR verdict,
from the graph's custom stream (:func:`~searchain_graph.method.review.emit_verdict`). Readers of a run's events
(:meth:`RunManager.events`) get every event from a given id on, so a browser that reconnects
with ``Last-Event-ID`` resumes where it stopped and never starts the question again. Runs beyond
``max_concurrent`` wait their turn (at most ``max_waiting`` of them); only the newest ``keep``
finished runs are kept (with a durable store, the newest ``keep`` of the store, every replica's),
and their checkpoints (when the graph has a checkpointer) go with them.
:meth:`RunManager.drain` stops it on time when the server shuts down.

With a durable :class:`~searchain_graph.serve.store.RunStore` (``searchain serve --db``), every
run and event is also written to the store as it happens, and :meth:`RunManager.restore` reads
them back when the server starts: finished runs are listed again with their events, and a run
that was in flight when the process stopped (killed or shut down) resumes from the last
checkpoint of its thread, is restarted from its question when no checkpoint was written, or is
marked failed with the reason. None is silently lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

from searchain_graph.method.question import InvalidQuestionError, validate_question
from searchain_graph.method.state import OUTPUT_KEYS
from searchain_graph.serve.http import BadRequest, lone_surrogate
from searchain_graph.serve.recovery import Recovery
from searchain_graph.serve.run import MAX_ERROR_CHARS, STOPPED_DURABLE, Run, follow_store, tree_fragment, verdict_line
from searchain_graph.serve.store import ClaimLostError, RunStore, StoredRun, StoreWriteError
from searchain_graph.viz.progress import progress_line

__all__ = ["Run", "RunManager"]

logger = logging.getLogger(__name__)

ENDS = ("done", "failed", "review")
"""The events after which a run waits for nothing more of its task: its end, or a pause for a person."""
CLEANUP_GRACE_S = 5.0
"""How long :meth:`RunManager.close` waits for the pruning and checkpoint deletions under way."""


class RunManager(Recovery):
    """Starts questions on one compiled graph and keeps their events.

    Args:
        graph: The SearChain graph (any compiled graph taking ``{"question": ...}``). It is
            shared by every run: one model per process.
        context: The runtime context of every run (``Context``), or None.
        max_concurrent: Runs streaming at once; the others wait (``queued``). A local model
            decodes one call at a time unless built with ``max_batch_size`` > 1.
        keep: Finished runs kept for ``/runs/{id}``; older ones are dropped.
        max_question_chars: Longer questions are refused before a run starts.
        max_waiting: Runs waiting their turn at most; more are refused (503).
        store: Where runs and events are also written (default: nowhere, they live in memory).
    """

    def __init__(
        self,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        *,
        context: Any = None,
        max_concurrent: int = 1,
        keep: int = 100,
        max_question_chars: int = 2000,
        max_waiting: int = 100,
        store: RunStore | None = None,
    ) -> None:
        if max_concurrent < 1 or keep < 1 or max_waiting < 1:
            raise ValueError("max_concurrent, keep and max_waiting must be at least 1")
        self.graph = graph
        self.context = context
        self.keep = keep
        self.max_question_chars = max_question_chars
        self.max_waiting = max_waiting
        self.closing = False
        """Set by :meth:`drain`: no run starts any more."""
        self.store = store if store is not None else RunStore()
        self._slots = asyncio.Semaphore(max_concurrent)
        self._runs: dict[str, Run] = {}
        self._held: dict[str, Run] = {}
        self._dropping: set[asyncio.Task[None]] = set()

    @property
    def reviews(self) -> bool:
        """Whether the graph pauses corrections for a person (built with ``review=True``: a ``review`` node)."""
        return "review" in getattr(self.graph, "nodes", {})

    def newest(self) -> list[Run]:
        """The runs kept, newest first."""
        return sorted(self._runs.values(), key=lambda r: r.created, reverse=True)

    def get(self, run_id: str) -> Run | None:
        """The run with this id, if this process keeps it (:meth:`aget` also reads a shared store)."""
        return self._runs.get(run_id)

    async def aget(self, run_id: str) -> Run | None:
        """The run with this id: this process's while it runs or its end is held here; else, shared, as stored."""
        run = self._runs.get(run_id)
        if not self.store.shared or (run is not None and (run.live or run_id in self._held)):
            return run
        stored = await asyncio.to_thread(self.store.get, run_id)
        return run if stored is None else Run.from_stored(stored)

    async def listing(self) -> list[dict[str, Any]]:
        """The runs kept, newest first, as JSON without outputs or event counts (shared store: every replica's)."""
        if self.store.shared:  # a run whose end is held here, unstored, as this process has it
            rows = await asyncio.to_thread(self.store.rows, self.keep)
            runs = [self._held[r.id] if r.id in self._held else Run.from_stored(r) for r in rows]
        else:
            runs = self.newest()
        return [{k: v for k, v in r.summary().items() if k not in ("output", "events")} for r in runs]

    async def astart(self, question: object) -> Run:
        """:meth:`start`, with the run's row written to a durable store before it returns (off the loop).

        Raises:
            As :meth:`start`.
        """
        return self.start(question, saved=await asyncio.to_thread(self._row_for, question))

    def _row_for(self, question: object) -> StoredRun | None:
        """Validate ``question`` and, with a durable store, write the row of the run it will start."""
        if not self.store.durable:
            return None
        text = self._checked(question)
        self._admit()
        run_id = uuid.uuid4().hex
        row = StoredRun(run_id, text, f"searchain-serve-{run_id}", time.time(), "queued")
        try:
            self.store.claim(row.thread_id)  # before the row exists: no other replica can adopt it
        except StoreWriteError as exc:
            raise BadRequest(503, f"runs cannot be stored now ({exc}); try again later", {"retry-after": "5"}) from None
        self._save_new(row)
        return row

    def _save_new(self, row: StoredRun) -> None:
        """Write a new run's row; a store that cannot write refuses the run (503), its claim given up."""
        try:
            self.store.save(row)
        except StoreWriteError as exc:
            self.store.release(row.thread_id)
            raise BadRequest(503, f"runs cannot be stored now ({exc}); try again later", {"retry-after": "5"}) from None

    def start(self, question: object, *, saved: StoredRun | None = None) -> Run:
        """Validate the question and start its run.

        Raises:
            InvalidQuestionError: not text, empty, longer than ``max_question_chars``, or holding a
                lone surrogate (not text either: it cannot be written as UTF-8).
            BadRequest: 503 when the server is shutting down or ``max_waiting`` runs wait already.
        """
        if saved is not None:  # validated and admitted by astart, which wrote its row
            run = Run(id=saved.id, question=saved.question, thread_id=saved.thread_id, created=saved.created)
        else:
            text = self._checked(question)
            self._admit()
            run_id = uuid.uuid4().hex
            run = Run(id=run_id, question=text, thread_id=f"searchain-serve-{run_id}")
            self.store.claim(run.thread_id)
            if self.store.durable:
                self._save_new(run.stored())
        run_id = run.id
        self._runs[run_id] = run
        run.task = asyncio.create_task(self._execute(run), name=f"searchain run {run_id}")
        self._evict()
        return run

    async def decide(self, run: Run, value: object) -> Run:
        """Resume a run paused for review with a person's decision (``Command(resume=value)``).

        The run's thread is claimed first; with a shared store the run is read again, so that any
        replica can take the decision on a run another one paused.

        Returns:
            The run, resuming here.

        A decision names the correction it answers (``"id"``, or ``"round"`` and ``"node"``), so
        that a retried one never lands on the next correction, which nobody has seen.

        Raises:
            BadRequest: 409 when the run is not waiting for a decision (or another replica is
                resuming it), or waits for one on another correction; 400 when ``value`` is not a
                decision or names no correction
                (:func:`~searchain_graph.method.review.review_decision` says why).
        """
        from searchain_graph.method.review import named_review, review_decision, review_id

        try:
            review_decision(value)
        except ValueError as exc:
            raise BadRequest(400, str(exc)) from None
        named = named_review(value)
        if named is None:
            raise BadRequest(
                400,
                'a decision names the correction it answers: {"decision": ..., "id": ...} with the '
                'review\'s "id" (or its "round" and "node")',
            )
        if run.status == "review" and not self.reviews:
            raise BadRequest(
                409,
                f"run {run.id} paused for a review under a server started with --review, and this one runs "
                "without it: start the server with --review to decide it",
            )
        if run.status != "review" or not await asyncio.to_thread(self.store.claim, run.thread_id):
            raise BadRequest(409, f"run {run.id} is not waiting for a review (it is {run.status})")
        if self.store.shared:
            stored = await asyncio.to_thread(self.store.get, run.id)
            run = Run.from_stored(stored) if stored is not None else run
            self._runs[run.id] = run
        if run.status != "review" or run.review is None:
            await self._release(run.thread_id)
            raise BadRequest(409, f"run {run.id} is not waiting for a review (it is {run.status})")
        waiting = str(run.review.get("id") or review_id(run.review.get("round"), run.review.get("node")))
        if named != waiting:
            await self._release(run.thread_id)
            raise BadRequest(409, f"the decision answers {named}, but run {run.id} waits for a decision on {waiting}")
        run.review = None
        run.status = "queued"
        # Another replica may have lost this claim while resuming the run: it waits the claim's grace first.
        settle = self.store.claim_grace_s > 0
        run.task = asyncio.create_task(
            self._execute(run, decision=value, settle=settle), name=f"searchain run {run.id}"
        )
        return run

    def _admit(self) -> None:
        if self.closing:
            raise BadRequest(503, "the server is shutting down")
        waiting = sum(1 for r in self._runs.values() if r.status == "queued")
        if waiting >= self.max_waiting:
            raise BadRequest(503, f"{waiting} runs are waiting already; try again later", {"retry-after": "5"})

    def _checked(self, question: object) -> str:
        text = validate_question(question, self.max_question_chars)
        position = lone_surrogate(text)
        if position is not None:
            raise InvalidQuestionError(
                f"question holds a lone surrogate (U+{ord(text[position]):04X} at character {position}), which is "
                "not text"
            )
        return text

    async def events(self, run: Run, after: int = -1) -> AsyncIterator[dict[str, Any]]:
        """Every event of ``run`` with an id above ``after``, waiting for new ones until it ends.

        A run paused for review has not ended: its stream stays open through the decision. With a
        shared store the events are read from it, whichever replica writes them: at once when the
        store announces a change (PostgreSQL's ``NOTIFY``), else every ``follow_poll_s`` seconds;
        those of a run whose end this process holds, unstored (:meth:`_hold_end`), from memory.
        """
        if self.store.shared:

            def held() -> list[dict[str, Any]] | None:
                kept = self._held.get(run.id)
                return None if kept is None else kept.events

            async for event in follow_store(self.store, run.id, after, lambda: self.closing, held=held):
                yield event
            return
        position = after + 1
        while True:
            async with run.changed:
                while len(run.events) <= position and not run.finished:
                    await run.changed.wait()
                fresh = run.events[position:]
                finished = run.finished
            for event in fresh:
                yield event
            position += len(fresh)
            if finished and position >= len(run.events):
                return

    async def drain(self, grace: float) -> None:
        """Stop on time: refuse new runs, cancel the waiting ones, give the running ones ``grace`` seconds, cancel.

        A cancelled run ends with a ``failed`` event, which ends its event streams.
        """
        self.closing = True
        for run in list(self._runs.values()):
            if run.status == "queued" and run.task is not None:
                run.task.cancel()
        running = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        if running and grace > 0:
            await asyncio.wait(running, timeout=grace)
        await self.close()

    async def close(self) -> None:
        """Cancel the runs still going (the server is shutting down)."""
        self.closing = True
        tasks = [r.task for r in self._runs.values() if r.task is not None and not r.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._dropping:  # pruning and checkpoint deletions under way: a few seconds to finish
            await asyncio.wait(list(self._dropping), timeout=CLEANUP_GRACE_S)
        for run_id in self._held:  # their claims go with the store: stored in flight, they are taken up again
            logger.warning("run %s: its end was never stored (the database refused writes): it will be resumed", run_id)
        for run in list(self._runs.values()):
            if not run.finished:  # cancelled before its task began: it could not say so itself
                if self.store.durable:
                    run.status = "error"
                    await self._emit(run, "failed", {"error": STOPPED_DURABLE}, persist=False)
                    continue
                run.error = "the server stopped before the run finished"
                await self._emit(run, "failed", {"error": run.error}, "error")

    async def _emit(
        self, run: Run, event: str, data: Mapping[str, Any], status: str | None = None, *, persist: bool = True
    ) -> None:
        if persist and self.store.shared and not self.store.holds(run.thread_id):
            # Another replica may be running it: nothing more of this one is written.
            raise ClaimLostError(f"this replica no longer holds the claim on thread {run.thread_id}")
        async with run.changed:
            changed = status is not None and status != run.status
            if status is not None:
                run.status = status
            record = {"id": len(run.events), "event": event, "data": {"status": run.status, **data}}
            run.events.append(record)
            try:
                if persist and self.store.durable:
                    # Off the event loop: a checkpointer on the same database commits from the loop.
                    row = run.stored() if changed or event in ("done", "failed") else None
                    await asyncio.to_thread(self._persist, run.id, row, record)
            except StoreWriteError as exc:
                if not exc.interrupted:
                    run.unstored.append(record)  # refused: written when the store takes writes again
                if event not in ENDS:
                    raise  # the run cannot go on unrecorded: it fails (_execute)
                # Its end, unstored: readers are told all the same. The row still says it is in
                # flight: with a shared store this process holds the end until it can write it
                # (_hold_end); else the next start takes the run up again.
                logger.warning("run %s: its %s event could not be stored (%s)", run.id, event, exc)
            finally:
                run.changed.notify_all()  # whatever happened: a reader waits for no event that came

    def _persist(self, run_id: str, row: StoredRun | None, record: dict[str, Any]) -> None:
        self.store.record(run_id, record, row)  # together: a run's "done" row never lacks its last event

    async def _execute(self, run: Run, *, resume: bool = False, decision: object = None, settle: bool = False) -> None:
        """Run ``run`` to its end, its pause for review or its failure; its thread's claim given up at the end.

        With a shared store the run goes on only while this process holds its thread's claim
        (:meth:`~searchain_graph.serve.recovery.Recovery._while_claimed`): a claim lost, or the
        database out of reach, stops it here, stored in flight, for the replica that claims it next.
        ``settle``: the claim was just taken on a run paused for review (:meth:`decide`).
        """
        try:
            await self._while_claimed(
                run, self._steps(run, resume=resume or decision is not None, decision=decision, settle=settle)
            )
        except asyncio.CancelledError:
            if self.store.durable:
                # Stored as in flight: the next start resumes it. Readers are told, and their streams end.
                run.status = "error"
                await self._emit(run, "failed", {"error": STOPPED_DURABLE}, persist=False)
                raise
            run.error = "the server stopped before the run finished"
            await self._emit(run, "failed", {"error": run.error}, "error")
            raise
        except Exception as exc:  # noqa: BLE001 - any failure of a run is reported to its page
            if await self._left_in_flight(run, exc):
                return
            located = [n for n in getattr(exc, "__notes__", []) if n.startswith("SearChain step")]
            message = located[-1] if located else f"{type(exc).__name__}: {exc}"
            refused = self.store.refusal(exc)
            if refused is not None:  # a full disk, a read-only database: the run cannot go on (one line)
                message = f"the run could not be stored: {refused}"
                logger.warning("run %s failed: %s", run.id, message)
            else:
                logger.exception("run %s failed", run.id)
            run.error = message if len(message) <= MAX_ERROR_CHARS else message[: MAX_ERROR_CHARS - 1] + "…"
            try:
                await self._emit(run, "failed", {"error": run.error}, "error")
            except ClaimLostError as lost:  # lost just now: the replica that claims it next takes it up
                logger.warning("run %s: its failure is not stored: %s", run.id, lost)
        finally:
            if not self._hold_end(run):
                await self._release(run.thread_id)
            self._evict()

    async def _steps(self, run: Run, *, resume: bool, decision: object, settle: bool) -> None:
        """The body of :meth:`_execute`: the graph streamed, each step an event, then the run's end or pause."""
        if settle and not await self._settled(run):
            return
        if not resume and not run.events:
            await self._emit(run, "update", {"progress": "queued", "html": tree_fragment({"question": run.question})})
        async with self._slots:
            await self._emit(run, "update", {"progress": "started"}, status="running")
            state: dict[str, Any] = {"question": run.question}
            config: Any = {
                "configurable": {"thread_id": run.thread_id},
                "run_name": "searchain",
                "metadata": {"searchain_run_id": run.id},
                **self._claim_checks(run),
            }
            # None: on from the last checkpoint; a Command: on with a person's decision.
            start: Any = {"question": run.question}
            if decision is not None:
                start = Command(resume=decision)
            elif resume:
                start = None
            # With a durable store, each step's checkpoint is written before the next step runs.
            # Without a checkpointer there is nothing to write: LangGraph fails on "sync" there,
            # and warns on any durability.
            saver = getattr(self.graph, "checkpointer", None) is not None
            durability: Any = {"durability": "sync" if self.store.durable else "async"} if saver else {}
            stream = self.graph.astream(
                start,
                config,
                context=self.context,
                stream_mode=["updates", "values", "custom"],
                **durability,
            )
            line: str | None = None
            paused: dict[str, Any] | None = None
            try:
                async for mode, chunk in stream:
                    if not isinstance(chunk, dict):
                        continue
                    if mode == "custom":
                        if chunk.get("searchain") == "verdict":
                            await self._emit(run, "verdict", {"verdict": verdict_line(chunk), "check": chunk})
                        continue
                    if mode == "updates":
                        if "__interrupt__" in chunk:
                            paused = next((dict(i.value) for i in chunk["__interrupt__"]), None)
                            continue
                        line = progress_line(chunk, state)
                        continue
                    state = chunk
                    if line is not None or state.get("rounds"):
                        await self._emit(run, "update", {"progress": line, "html": tree_fragment(state)})
                    line = None
            finally:
                # Closed however the loop ends: a run stopped between two steps (shut down, its claim
                # lost) gives its thread back to the graph (SearChainGraph's claim) now, not when collected.
                close = getattr(stream, "aclose", None)
                if close is not None:
                    with contextlib.suppress(Exception):  # the run's own end (or error) is what counts
                        await close()
        if paused is not None:
            run.review = paused
            what = f"review: IR would correct node {paused.get('node')} of round {paused.get('round')}"
            await self._emit(run, "review", {"progress": what, "review": paused}, "review")
            return
        run.output = {k: state[k] for k in OUTPUT_KEYS if k in state}
        await self._emit(run, "done", {"answer": state.get("answer"), "html": tree_fragment(state)}, "done")

    def _evict(self) -> None:
        if self.closing:
            return  # shutting down: a run stopped now is not finished, whatever its page was told
        finished = [r for r in self._runs.values() if r.finished and r.id not in self._held]
        dropped = [r.thread_id for r in finished[: max(0, len(finished) - self.keep)]]
        for run in finished[: len(dropped)]:
            del self._runs[run.id]
        # A durable store is pruned as a whole (with a shared one, the runs of every replica, those of
        # replicas gone included); the checkpoints of the runs it forgets go with them.
        if self.store.durable or dropped:
            self._background(self._prune(dropped))

    def _background(self, work: Any) -> None:
        task = asyncio.create_task(work)
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    async def _prune(self, dropped: list[str]) -> None:
        if self.store.durable:
            try:  # off the loop, as every write to the store
                dropped = await asyncio.to_thread(self.store.prune, self.keep)
            except StoreWriteError as exc:  # refused (read-only, a full disk): the next run tries again
                logger.warning("could not prune the stored runs: %s", exc)
                return
            except Exception:  # noqa: BLE001 - a store that cannot prune keeps the runs; the next run tries again
                logger.warning("could not prune the stored runs", exc_info=True)
                return
        if getattr(self.graph, "checkpointer", None) is None:
            return
        for thread_id in dropped:
            # The async method: a saver on the loop (SQLite's, PostgreSQL's) refuses sync calls from it.
            try:
                await self.graph.checkpointer.adelete_thread(thread_id)  # type: ignore[union-attr]
            except Exception:  # noqa: BLE001 - a checkpointer that cannot delete keeps the thread
                logger.warning("could not delete the checkpoints of thread %s", thread_id)
