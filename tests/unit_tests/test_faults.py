"""Injected faults: the LLM, the retriever and the reader failing on their 1st, 2nd or 3rd call, or hanging.

With the default retry policy a transient error (``ConnectionError``, ``TimeoutError``) is
retried with backoff, so a run recovers from one or two failures of a step; a third fails the
run, and the error carries a note naming the step, the round and the cause. A programming error
(``ValueError``) is not retried. A step that hangs past ``step_timeout`` fails the run with
``TimeoutError``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from pydantic import PrivateAttr

from searchain_graph import ReaderOutput, create_searchain_graph
from searchain_graph.ir.readers.base import Passage
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm


class Faults:
    """Which calls of a component fail (1-based), with what."""

    def __init__(self, failing: Sequence[int], error: type[Exception] = ConnectionError, hang: float = 0.0) -> None:
        self.failing, self.error, self.hang, self.calls = set(failing), error, hang, 0

    def call(self, what: str) -> None:
        self.calls += 1
        if self.calls in self.failing:
            if self.hang:
                time.sleep(self.hang)
            raise self.error(f"{what} call {self.calls} failed (injected)")


def faulty_llm(faults: Faults) -> RuleChatModel:
    inner = tree_llm()

    def respond(messages: Sequence[BaseMessage]) -> str:
        faults.call("LLM")
        return str(inner.respond(messages))

    return RuleChatModel(respond=respond)


class FaultyRetriever(BaseRetriever):
    faults: Any
    _inner: BaseRetriever = PrivateAttr(default_factory=retriever)

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        self.faults.call("retriever")
        return self._inner.invoke(query)


class FaultyReader(ScriptedReader):
    def __init__(self, faults: Faults) -> None:
        super().__init__(TREE_READS)
        self.faults = faults

    def read_batch(self, pairs: Sequence[tuple[str, Passage]]) -> list[ReaderOutput]:  # type: ignore[override]
        self.faults.call("reader")
        return super().read_batch(pairs)


def build(component: str, faults: Faults, **options: Any) -> Any:
    llm = faulty_llm(faults) if component == "llm" else tree_llm()
    search = FaultyRetriever(faults=faults) if component == "retriever" else retriever()
    reader = FaultyReader(faults) if component == "reader" else ScriptedReader(TREE_READS)
    return create_searchain_graph(llm, search, reader, confidence_threshold=1.5, **options)


COMPONENTS = ["llm", "retriever", "reader"]
STEP = {"llm": "coq_generation", "retriever": "ir_check", "reader": "ir_check"}


@pytest.mark.parametrize("component", COMPONENTS)
@pytest.mark.parametrize("failing", [[1], [2], [1, 2], [2, 3]])
def test_transient_failures_are_retried_and_the_run_recovers(component: str, failing: list[int]) -> None:
    faults = Faults(failing)
    out = build(component, faults).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto Coach Terminal" and out["rounds"] == 3
    assert faults.calls > max(failing)


CALLS_PER_TRY = {"llm": 1, "retriever": 3, "reader": 1}
"""Calls one try of the step makes: round 1 retrieves its three queries in one batch."""


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_third_failure_fails_the_run_naming_the_step_and_round(component: str) -> None:
    faults = Faults(range(1, 100))
    with pytest.raises(ConnectionError, match="failed \\(injected\\)") as caught:
        build(component, faults).invoke({"question": QUESTION})
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert f"SearChain step '{STEP[component]}' failed in round 1: ConnectionError" in notes
    assert faults.calls == 3 * CALLS_PER_TRY[component]


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_programming_error_is_not_retried(component: str) -> None:
    faults = Faults(range(1, 100), error=ValueError)
    with pytest.raises(ValueError, match="failed \\(injected\\)") as caught:
        build(component, faults).invoke({"question": QUESTION})
    assert faults.calls == CALLS_PER_TRY[component]
    assert f"SearChain step '{STEP[component]}'" in "\n".join(caught.value.__notes__)


def test_a_failure_in_a_later_round_names_that_round() -> None:
    faults = Faults([2, 3, 4])  # the LLM's second call writes round 2
    with pytest.raises(ConnectionError) as caught:
        build("llm", faults).invoke({"question": QUESTION})
    assert "SearChain step 'coq_generation' failed in round 2" in "\n".join(caught.value.__notes__)


@pytest.mark.parametrize("component", COMPONENTS)
async def test_the_async_path_recovers_too(component: str) -> None:
    faults = Faults([1])
    out = await build(component, faults).ainvoke({"question": QUESTION})
    assert out["answer"] == "Toronto Coach Terminal"


@pytest.mark.parametrize("component", COMPONENTS)
async def test_a_hung_step_fails_the_run_after_step_timeout(component: str) -> None:
    faults = Faults([1], hang=1.5)
    started = time.perf_counter()
    with pytest.raises(TimeoutError):
        await build(component, faults, step_timeout=0.3, retry_policy=None).ainvoke({"question": QUESTION})
    assert time.perf_counter() - started < 1.4
