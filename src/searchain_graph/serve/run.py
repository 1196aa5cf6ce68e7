"""One run of ``searchain serve``: a question, its status, its events, and how it is shown.

:class:`Run` is what :class:`~searchain_graph.serve.runs.RunManager` keeps for each question, and
what :mod:`~searchain_graph.serve.store` writes; :func:`verdict_line` and :func:`tree_fragment`
are how a step of it reaches the page.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from searchain_graph.serve.store import RunStore, StoredRun
from searchain_graph.viz import render_tree

__all__ = [
    "MAX_ERROR_CHARS",
    "STOPPED_DURABLE",
    "Run",
    "follow_store",
    "tree_fragment",
    "verdict_line",
]

STOPPED_DURABLE = "the server stopped before the run finished; it resumes when the server starts again"
"""What readers of a run in flight are told when a server with a durable store shuts down."""

MAX_ERROR_CHARS = 500
"""An error shown to the page is cut to this length (the full traceback goes to the log)."""


@dataclass
class Run:
    """One question's run: its status, its events so far and, once done, its output."""

    id: str
    question: str
    thread_id: str
    created: float = field(default_factory=time.time)
    status: str = "queued"
    """``queued``, ``running``, ``review`` (paused for a person's decision), ``done`` or ``error``."""
    review: dict[str, Any] | None = None
    """The pending correction's payload while the run waits for a person (``review``)."""
    events: list[dict[str, Any]] = field(default_factory=list)
    output: dict[str, Any] | None = None
    error: str | None = None
    unstored: list[dict[str, Any]] = field(default_factory=list)
    """Its events that the store refused to write (a read-only database), oldest first: written once it takes them."""
    task: asyncio.Task[None] | None = None
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    @classmethod
    def from_stored(cls, stored: StoredRun) -> Run:
        """The run as a store kept it; one paused for review has its payload from its last ``review`` event."""
        run = cls(
            id=stored.id,
            question=stored.question,
            thread_id=stored.thread_id,
            created=stored.created,
            status=stored.status,
            events=list(stored.events),
            output=stored.output,
            error=stored.error,
        )
        if run.status == "review":
            reviews = [e for e in run.events if e["event"] == "review"]
            run.review = reviews[-1]["data"].get("review") if reviews else None
        return run

    @property
    def finished(self) -> bool:
        """Whether the run has its answer or its error."""
        return self.status in ("done", "error")

    @property
    def live(self) -> bool:
        """Whether the run's task is going in this process (queued or running here)."""
        return self.task is not None and not self.task.done()

    def stored(self) -> StoredRun:
        """The run's row for a :class:`~searchain_graph.serve.store.RunStore` (events apart)."""
        return StoredRun(self.id, self.question, self.thread_id, self.created, self.status, self.error, self.output)

    def summary(self) -> dict[str, Any]:
        """The run as JSON: its ids, status, question and, when done, the answer and the output."""
        return {
            "run_id": self.id,
            "thread_id": self.thread_id,
            "status": self.status,
            "question": self.question,
            "answer": (self.output or {}).get("answer"),
            "error": self.error,
            "events": len(self.events),
            "review": self.review,
            "output": self.output,
        }


async def follow_store(
    store: RunStore,
    run_id: str,
    after: int,
    stop: Callable[[], bool],
    poll: float | None = None,
    held: Callable[[], list[dict[str, Any]] | None] = lambda: None,
) -> AsyncIterator[dict[str, Any]]:
    """The events of a run in a shared store, numbered above ``after``, until the run ends.

    Whichever replica writes them, they are read back (off the event loop) as soon as the store
    announces a change (:meth:`RunStore.watch`), else every ``poll`` seconds (default: the store's
    ``follow_poll_s``). A run paused for review has not ended; ``stop()`` true (the server shutting
    down) ends the stream. ``held()``: the run's events when this process holds its end in memory
    (the store refused to write it), which end the stream; else None.
    """
    poll = store.follow_poll_s if poll is None else poll
    position = after
    with store.watch(run_id) as watch:
        while True:
            watch.clear()  # a change announced from here on is read by the next pass
            fresh = await asyncio.to_thread(store.events_after, run_id, position)
            for event in fresh:
                yield event
                position = int(event["id"])
            if fresh:
                continue
            kept = held()
            if kept is not None:  # its end is held here, unstored: the rest is read from memory
                for event in kept:
                    if int(event["id"]) > position:
                        yield event
                return
            if stop():
                return
            row = await asyncio.to_thread(store.get_row, run_id)
            if row is None or row.status in ("done", "error"):
                # A run's end is written with its last event (RunStore.record): one more read has it.
                for event in await asyncio.to_thread(store.events_after, run_id, position):
                    yield event
                return
            await watch.wait(poll)


def verdict_line(check: Mapping[str, Any]) -> str:
    """``round 1, node 2: correction (f=6.20, θ=4.36)``: one verdict for the page's log."""
    f, theta = check.get("confidence"), check.get("threshold")
    scores = f" (f={f:.2f}, θ={theta:.2f})" if isinstance(f, float) and isinstance(theta, float) else ""
    who = f", {check['review']['decision']}ed by a person" if check.get("review") else ""
    return f"round {check.get('round')}, node {check.get('node')}: {check.get('action')}{scores}{who}"


def tree_fragment(state: Mapping[str, Any]) -> str:
    """The tree drawn from ``state`` so far, as the page inserts it (``render_tree``'s fragment)."""
    return render_tree(state, "fragment")
