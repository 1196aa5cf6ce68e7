"""One run at a time per checkpointer thread: a second run on a busy thread is refused or waits.

LangGraph lets two runs share a ``thread_id``: each loads the thread's latest checkpoint and
writes its own after every step, so their checkpoints interleave and each builds on the other's
half-finished state. :class:`SearChainGraph` (what :func:`~searchain_graph.method.graph.
create_searchain_graph` returns) claims the thread when a run starts and releases it when the
run ends, however it ends. A second run on the same thread, in the same process, raises
:class:`ThreadBusyError` (``on_busy="reject"``, the default, like the LangGraph server's
``multitask_strategy="reject"``) or waits for the first to end (``on_busy="wait"``).

The claim is per process. Runs in several processes on one shared checkpointer (a database)
need a server that queues them per thread, such as ``langgraph dev``.

A run without a checkpointer has no thread state to share and is never held back.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import Any, Literal, cast

from langchain_core.runnables import RunnableConfig
from langchain_core.runnables.config import ensure_config, merge_configs
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command

__all__ = ["OnBusy", "SearChainGraph", "ThreadBusyError"]

OnBusy = Literal["reject", "wait"]
"""What a run does when its thread is busy."""

CheckResume = Callable[[Any, Mapping[str, Any]], None]
"""Checks a ``Command(resume=...)`` value against the thread's state; raises to refuse it."""

_POLL_SECONDS = 0.01
_busy: set[tuple[int, str, str]] = set()
_changed = threading.Condition()


class ThreadBusyError(RuntimeError):
    """A run was started on a checkpointer thread that another run of this process is using."""


def _thread_key(graph: Any, config: RunnableConfig | None) -> tuple[int, str, str] | None:
    """``(checkpointer, thread_id, checkpoint_ns)`` of a run, or None when it keeps no thread state."""
    merged = ensure_config(merge_configs(graph.config, config))
    configurable = merged.get("configurable") or {}
    saver = graph.checkpointer if not isinstance(graph.checkpointer, bool) else None
    saver = saver or configurable.get("__pregel_checkpointer")
    thread = configurable.get("thread_id")
    if saver is None or graph.checkpointer is False or thread is None:
        return None
    return id(saver), str(thread), str(configurable.get("checkpoint_ns", ""))


def _busy_message(key: tuple[int, str, str]) -> str:
    where = f" (checkpoint namespace {key[2]!r})" if key[2] else ""
    return (
        f"thread_id {key[1]!r}{where} already has a SearChain run in progress: two runs on one thread "
        "would interleave their checkpoints. Wait for it to end, use another thread_id, or build the "
        "graph with on_busy='wait' to queue runs per thread."
    )


def _try_claim(key: tuple[int, str, str]) -> bool:
    with _changed:
        if key in _busy:
            return False
        _busy.add(key)
        return True


def _release(key: tuple[int, str, str]) -> None:
    with _changed:
        _busy.discard(key)
        _changed.notify_all()


@contextlib.contextmanager
def _claimed(key: tuple[int, str, str] | None, on_busy: OnBusy) -> Iterator[None]:
    if key is None:
        yield
        return
    with _changed:
        if key in _busy and on_busy == "reject":
            raise ThreadBusyError(_busy_message(key))
        _changed.wait_for(lambda: key not in _busy)
        _busy.add(key)
    try:
        yield
    finally:
        _release(key)


@contextlib.asynccontextmanager
async def _aclaimed(key: tuple[int, str, str] | None, on_busy: OnBusy) -> AsyncIterator[None]:
    if key is None:
        yield
        return
    while not _try_claim(key):  # polling: the event loop stays free, and a cancelled wait holds nothing
        if on_busy == "reject":
            raise ThreadBusyError(_busy_message(key))
        await asyncio.sleep(_POLL_SECONDS)
    try:
        yield
    finally:
        _release(key)


class SearChainGraph(CompiledStateGraph[Any, Any, Any, Any]):
    """A compiled SearChain graph whose runs hold their checkpointer thread while they run.

    ``invoke``, ``ainvoke``, ``batch`` and the event streams all go through :meth:`stream` or
    :meth:`astream`, which claim ``(checkpointer, thread_id, checkpoint_ns)`` for the run.
    """

    def __init__(
        self, *args: Any, on_busy: OnBusy = "reject", check_resume: CheckResume | None = None, **kwargs: Any
    ) -> None:
        """As :class:`CompiledStateGraph`, plus ``on_busy`` and ``check_resume``.

        ``on_busy`` is ``"reject"`` or ``"wait"``; ``check_resume`` is called with a ``Command``'s
        ``resume`` value and the thread's state before the run starts: what it raises refuses the
        command, which is then not recorded.
        """
        if on_busy not in ("reject", "wait"):
            raise ValueError(f"on_busy must be 'reject' or 'wait', got {on_busy!r}")
        super().__init__(*args, **kwargs)
        self.on_busy: OnBusy = on_busy
        self.check_resume = check_resume

    @classmethod
    def from_compiled(
        cls,
        graph: CompiledStateGraph[Any, Any, Any, Any],
        on_busy: OnBusy = "reject",
        check_resume: CheckResume | None = None,
    ) -> SearChainGraph:
        """The same compiled graph, holding its thread while a run runs (as ``Pregel.copy`` rebuilds one)."""
        fields = {k: v for k, v in graph.__dict__.items() if k != "__orig_class__"}
        return cls(**fields, on_busy=on_busy, check_resume=check_resume)

    def _resumes(self, input: Any, config: RunnableConfig | None) -> bool:
        """Whether ``input`` resumes a thread whose state ``check_resume`` must see first."""
        return (
            self.check_resume is not None
            and isinstance(input, Command)
            # A Command that only resumes (``resume=None`` included: LangGraph has no answer to that)
            and (input.resume is not None or (not input.goto and input.update is None))
            and isinstance(self.checkpointer, BaseCheckpointSaver)
            and bool((config or {}).get("configurable", {}).get("thread_id"))
        )

    def stream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Iterator[Any]:
        """As :meth:`CompiledStateGraph.stream`, one run per thread at a time.

        Raises:
            ThreadBusyError: the thread has a run in progress and ``on_busy`` is ``"reject"``.
        """
        with _claimed(_thread_key(self, config), self.on_busy):
            if self._resumes(input, config):
                assert self.check_resume is not None
                self.check_resume(input.resume, self.get_state(cast(RunnableConfig, config)).values)
            yield from super().stream(input, config, **kwargs)

    async def astream(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> AsyncIterator[Any]:
        """As :meth:`CompiledStateGraph.astream`, one run per thread at a time.

        Raises:
            ThreadBusyError: the thread has a run in progress and ``on_busy`` is ``"reject"``.
        """
        async with _aclaimed(_thread_key(self, config), self.on_busy):
            if self._resumes(input, config):
                assert self.check_resume is not None
                self.check_resume(input.resume, (await self.aget_state(cast(RunnableConfig, config))).values)
            async for chunk in super().astream(input, config, **kwargs):
                yield chunk
