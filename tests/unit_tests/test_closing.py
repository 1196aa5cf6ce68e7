"""The calls a run saves: ``stop_at_final``, ``close_early`` and ``compose_supported`` (adaptations.closing)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from searchain_graph import Context, ReaderOutput, create_searchain_graph
from searchain_graph.method.adaptations.closing import (
    FINAL_MARKER,
    asks_for_last_answer,
    closes_chain,
    supported_answer,
)
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, is_tracing, retriever, tree_llm

SAVING = {"stop_at_final": True, "close_early": True, "compose_supported": True}


class StopsRecorded(RuleChatModel):
    """:func:`tree_llm`'s replies, with the stop sequences of each call recorded."""

    stops: list[list[str] | None] = []

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> ChatResult:
        self.stops.append(stop)
        return super()._generate(messages, stop, **kwargs)


def recording_llm() -> StopsRecorded:
    return StopsRecorded(respond=tree_llm().respond, stops=[])


def tracing_calls(llm: RuleChatModel) -> list[Sequence[BaseMessage]]:
    return [m for m in llm.calls if is_tracing(m)]


def test_the_three_switches_save_a_round_and_the_tracing_call() -> None:
    before_llm, now_llm = recording_llm(), recording_llm()
    before = create_searchain_graph(before_llm, retriever(), ScriptedReader(TREE_READS)).invoke({"question": QUESTION})
    now = create_searchain_graph(now_llm, retriever(), ScriptedReader(TREE_READS), **SAVING).invoke(
        {"question": QUESTION}
    )
    # Without them: three rounds (round 3 writes the chain again, all duplicates) and the tracing reader.
    assert before["rounds"] == 3 and before["usage"]["llm_calls"] == 4 and len(tracing_calls(before_llm)) == 1
    # With them: IR's completion of round 2's last node closes the path, and IR stands behind every step.
    assert now["rounds"] == 2 and now["usage"]["llm_calls"] == 2 and tracing_calls(now_llm) == []
    assert now["answer"] == before["answer"] == "Toronto Coach Terminal"
    assert [r["query"] for r in now["references"]] == [r["query"] for r in before["references"]]
    assert "[1]" in now["final_content"] and "[3]" in now["final_content"]
    assert now["final_content"].endswith("So the final answer is Toronto Coach Terminal.")
    assert any("closes the path" in w for w in now["warnings"])
    assert now_llm.stops == [[FINAL_MARKER], [FINAL_MARKER]] and before_llm.stops == [None, None, None, None]


def test_the_paper_preset_and_the_paper_tracing_keep_every_call() -> None:
    for context in (Context(preset="paper", **SAVING), Context(tracing="pairs", **SAVING)):
        llm = recording_llm()
        out = create_searchain_graph(llm, retriever(), ScriptedReader(TREE_READS), context).invoke(
            {"question": QUESTION}
        )
        # The paper's tracing writes the final content itself: its chains keep theirs, and it always runs.
        assert all(s is None for s in llm.stops) and len(tracing_calls(llm)) == 1
        assert out["answer"] == "Toronto Coach Terminal"


def test_a_step_ir_does_not_stand_behind_keeps_the_tracing_call() -> None:
    unsure = {**TREE_READS, "performer": ReaderOutput("Broken Social Scene", 0.5)}  # g is not the LLM's answer
    llm = recording_llm()
    out = create_searchain_graph(llm, retriever(), ScriptedReader(unsure), **SAVING).invoke({"question": QUESTION})
    assert out["rounds"] == 2 and len(tracing_calls(llm)) == 1


@pytest.mark.parametrize(
    ("question", "last"),
    [
        ("Where was the performer of Spirit If... born?", True),
        ("Which film came out first, Heat or Ronin?", False),
        ("Who was born first, Kevin Drew or Feist?", False),
        ("Are Kevin Drew and Feist both musicians?", False),
        ("Was Kevin Drew born in Toronto?", False),
        ("What city is the band, whose founder was born in 1976, from?", True),
    ],
)
def test_only_a_question_answered_by_its_last_step_closes_early(question: str, last: bool) -> None:
    chain: list[Any] = [
        {"index": 1, "query": "q1", "answer": "a", "unsolved": False},
        {"index": 2, "query": "q2", "answer": "b", "unsolved": False},
    ]
    assert asks_for_last_answer(question) is last
    assert closes_chain(chain, 2, question) is last
    assert not closes_chain(chain, 1, question)  # a later node used the answer IR replaced
    assert not closes_chain([], 1, question)


def _ref(index: int, query: str, answer: str, g: str, source: str = "llm") -> Any:
    return {"index": index, "query": query, "answer": answer, "source": source, "document": None,
            "confidence": 5.0, "reader_answer": g, "round": 1}  # fmt: skip


def test_the_supported_answer_is_the_last_steps_and_the_readers_span_where_shorter() -> None:
    path = [_ref(1, "q1", "Kevin Drew.", "Kevin Drew"), _ref(2, "q2", "Toronto, Ontario, Canada.", "Toronto")]
    branch: Any = {"checks": [{"query": "q1", "action": "pass"}, {"query": "q2", "action": "pass"}]}
    assert supported_answer(path, branch, "Where was he born?") == "Toronto"
    corrected = [path[0], _ref(2, "q2", "Toronto", "Toronto", "corrected")]
    assert supported_answer(corrected, branch, "Where was he born?") == "Toronto"
    # Not when a node was left unreached, the chain ends elsewhere, a step is unconfirmed, or the
    # question compares.
    cut: Any = {"checks": [{"query": "q1", "action": "correction"}, {"query": "q2", "action": "not_reached"}]}
    assert supported_answer(path, cut, "Where was he born?") is None
    elsewhere: Any = {"checks": [{"query": "q1", "action": "pass"}, {"query": "q3", "action": "pass"}]}
    assert supported_answer(path, elsewhere, "Where was he born?") is None
    repeated: Any = {"checks": [{"query": "q2b", "action": "duplicate", "duplicate_of": {"query": "q2"}}]}
    assert supported_answer(path, repeated, "Where was he born?") == "Toronto"
    unconfirmed = [path[0], _ref(2, "q2", "Montreal", "Toronto")]
    assert supported_answer(unconfirmed, branch, "Where was he born?") is None
    assert supported_answer(path, branch, "Who was born first, Kevin Drew or Feist?") is None
    assert supported_answer([], branch, "Where was he born?") is None
