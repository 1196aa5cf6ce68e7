"""Two runs on one checkpointer thread at once: refused with a clear error, or queued; never interleaved."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from searchain_graph import create_searchain_graph
from searchain_graph.method.threads import SearChainGraph, ThreadBusyError
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm


class GatedLLM:
    """:func:`tree_llm` whose first call waits until the test opens the gate, so a run stays in progress."""

    def __init__(self) -> None:
        self.started = threading.Event()
        self.gate = threading.Event()
        self.inner = tree_llm().respond
        self.model = RuleChatModel(respond=self.respond)

    def respond(self, messages: Sequence[BaseMessage]) -> str:
        if not self.started.is_set():
            self.started.set()
            assert self.gate.wait(30), "the test never opened the gate"
        reply: str = self.inner(messages)
        return reply


def build(llm: Any, *, checkpointer: Any = True, **options: Any) -> SearChainGraph:
    saver = InMemorySaver() if checkpointer is True else checkpointer
    return create_searchain_graph(
        llm, retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5, checkpointer=saver, **options
    )


def thread(name: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": name}}


def linear(graph: SearChainGraph, name: str) -> list[int]:
    """The thread's checkpoint steps, oldest first, after checking they form one chain (no fork)."""
    history = list(graph.get_state_history(thread(name)))[::-1]
    for parent, child in zip(history, history[1:], strict=False):
        assert child.parent_config is not None
        assert child.parent_config["configurable"]["checkpoint_id"] == parent.config["configurable"]["checkpoint_id"]
    return [int(s.metadata["step"]) for s in history if s.metadata]


def test_a_second_run_on_a_busy_thread_is_refused_by_name() -> None:
    gated = GatedLLM()
    graph = build(gated.model)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(graph.invoke, {"question": QUESTION}, thread("t1"))
        assert gated.started.wait(10)
        with pytest.raises(ThreadBusyError, match=r"thread_id 't1' already has a SearChain run in progress"):
            graph.invoke({"question": QUESTION}, thread("t1"))
        assert graph.invoke({"question": QUESTION}, thread("t2"))["answer"]  # another thread runs meanwhile
        gated.gate.set()
        out = first.result(timeout=30)
    assert out["rounds"] == 3
    steps = linear(graph, "t1")
    assert steps == list(range(-1, len(steps) - 1))  # one run's checkpoints only, in order
    again = graph.invoke({"question": QUESTION}, thread("t1"))  # the thread is free once the run ended
    assert again["answer"] == out["answer"]
    assert len(linear(graph, "t1")) > len(steps)


def test_wait_queues_runs_on_one_thread() -> None:
    gated = GatedLLM()
    graph = build(gated.model, on_busy="wait")
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(graph.invoke, {"question": QUESTION}, thread("t"))
        assert gated.started.wait(10)
        second = pool.submit(graph.invoke, {"question": QUESTION}, thread("t"))
        assert not second.done()
        gated.gate.set()
        outs = [first.result(timeout=30), second.result(timeout=30)]
    assert outs[0]["answer"] == outs[1]["answer"] and outs[1]["rounds"] == 3
    steps = linear(graph, "t")  # two runs, one after the other, on one chain
    assert steps == list(range(-1, len(steps) - 1))
    assert [s for s in steps if s == -1] == [-1] and steps.count(0) == 1


def test_async_runs_are_refused_or_queued_too() -> None:
    async def main(on_busy: str) -> list[Any]:
        graph = build(tree_llm(), on_busy=on_busy)
        runs = [graph.ainvoke({"question": QUESTION}, thread("a")) for _ in range(3)]
        return await asyncio.gather(*runs, return_exceptions=True)

    refused = asyncio.run(main("reject"))
    assert sum(isinstance(r, ThreadBusyError) for r in refused) == 2
    assert sum(isinstance(r, dict) and r["rounds"] == 3 for r in refused) == 1
    queued = asyncio.run(main("wait"))
    assert all(isinstance(r, dict) and r["rounds"] == 3 for r in queued)


def test_a_cancelled_waiter_holds_nothing() -> None:
    async def main() -> dict[str, Any]:
        gated = GatedLLM()
        graph = build(gated.model, on_busy="wait")
        first = asyncio.create_task(graph.ainvoke({"question": QUESTION}, thread("c")))
        await asyncio.to_thread(gated.started.wait, 10)
        waiter = asyncio.create_task(graph.ainvoke({"question": QUESTION}, thread("c")))
        await asyncio.sleep(0.05)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        gated.gate.set()
        await first
        out: dict[str, Any] = await asyncio.wait_for(graph.ainvoke({"question": QUESTION}, thread("c")), 30)
        return out

    assert asyncio.run(main())["rounds"] == 3


def test_a_failed_run_releases_its_thread() -> None:
    calls = {"n": 0}

    def respond(messages: Sequence[BaseMessage]) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise ValueError("a programming error in the LLM client")
        reply: str = tree_llm().respond(messages)
        return reply

    graph = build(RuleChatModel(respond=respond))
    with pytest.raises(ValueError, match="programming error"):
        graph.invoke({"question": QUESTION}, thread("f"))
    assert graph.invoke({"question": QUESTION}, thread("f"))["rounds"] == 3


def test_without_a_checkpointer_nothing_is_held_back() -> None:
    gated = GatedLLM()
    graph = build(gated.model, checkpointer=None)
    with ThreadPoolExecutor(1) as pool:
        first = pool.submit(graph.invoke, {"question": QUESTION}, thread("n"))
        assert gated.started.wait(10)
        assert graph.invoke({"question": QUESTION}, thread("n"))["rounds"] == 3  # no thread state to share
        gated.gate.set()
        assert first.result(timeout=30)["rounds"] == 3


def test_copies_and_subgraphs_keep_the_guard() -> None:
    graph = build(tree_llm(), on_busy="wait")
    configured = graph.with_config(tags=["x"])
    assert isinstance(configured, SearChainGraph) and configured.on_busy == "wait"
    with pytest.raises(ValueError, match="on_busy must be 'reject' or 'wait'"):
        build(tree_llm(), on_busy="later")

    class Outer(TypedDict, total=False):
        question: str
        answer: str

    sub = build(tree_llm(), checkpointer=None)
    parent = StateGraph(Outer)
    parent.add_node("searchain", sub)
    parent.add_edge(START, "searchain")
    app = parent.compile(checkpointer=InMemorySaver())
    outs = [app.invoke({"question": QUESTION}, thread("p")) for _ in range(2)]
    assert outs[0]["answer"] == outs[1]["answer"] != ""
