"""The calls a run saves: ``stop_at_final``, ``close_early``, ``check_on``, ``compose_supported`` (closing)."""

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
    builds_on,
    closes_chain,
    supported_answer,
)
from tests.fakes import (
    QUESTION,
    TREE_READS,
    RuleChatModel,
    ScriptedReader,
    is_tracing,
    retriever,
    tracing_reply,
    tree_llm,
)
from tests.unit_tests.test_graph import CONFIDENT, correcting_llm

pytestmark = pytest.mark.shipped_preset

SAVING = {"stop_at_final": True, "close_early": True, "compose_supported": True}
OFF = {"stop_at_final": False, "close_early": False, "check_on": False, "compose_supported": False}
"""SearChain as it ran before the switches (the tuned preset now turns stop_at_final, close_early and check_on on)."""


class StopsRecorded(RuleChatModel):
    """A rule-based LLM that records each call's stop sequences and, as a real model does, stops there."""

    stops: list[list[str] | None] = []

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, **kwargs: Any) -> ChatResult:
        self.stops.append(stop)
        result = super()._generate(messages, stop, **kwargs)
        message = result.generations[0].message
        for s in stop or []:
            message.content = str(message.content).split(s, 1)[0]
        return result


def recording(llm: RuleChatModel) -> StopsRecorded:
    return StopsRecorded(respond=llm.respond, stops=[])


def recording_llm() -> StopsRecorded:
    return recording(tree_llm())


def tracing_calls(llm: RuleChatModel) -> list[Sequence[BaseMessage]]:
    return [m for m in llm.calls if is_tracing(m)]


def run(llm: RuleChatModel, reads: dict[str, ReaderOutput] = TREE_READS, **fields: Any) -> dict[str, Any]:
    return create_searchain_graph(llm, retriever(), ScriptedReader(reads), **fields).invoke({"question": QUESTION})


def test_close_early_saves_the_round_after_ir_changed_the_last_node() -> None:
    before_llm, now_llm = recording_llm(), recording_llm()
    before, now = run(before_llm, **OFF), run(now_llm, **{**OFF, "close_early": True})
    # Without it: round 3 writes the chain again (all duplicates); with it, IR's completion of round
    # 2's last node closes the path. Both trace it (round 2's chain concluded nothing).
    assert before["rounds"] == 3 and before["usage"]["llm_calls"] == 4
    assert now["rounds"] == 2 and now["usage"]["llm_calls"] == 3 and len(tracing_calls(now_llm)) == 1
    assert now["answer"] == before["answer"] == "Toronto Coach Terminal"
    assert [r["query"] for r in now["references"]] == [r["query"] for r in before["references"]]
    assert any("closes the path" in w for w in now["warnings"])


BORN_FIRST_WRONG = """[Query 1]: Where was Kevin Drew born?
[Answer 1]: Montreal.
[Query 2]: Who is the performer of Spirit If...?
[Answer 2]: Kevin Drew.
[Final Content]: Kevin Drew [2] was born in Montreal [1]."""
"""A chain whose second node does not build on the first node's (wrong) answer."""


def born_first_llm() -> RuleChatModel:
    """Writes :data:`BORN_FIRST_WRONG`; after IR's correction, the same chain with Toronto."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        wrong = BORN_FIRST_WRONG
        return wrong.replace("Montreal", "Toronto") if "should be Toronto" in messages[-1].text else wrong

    return RuleChatModel(respond=respond)


def test_check_on_saves_the_round_after_a_correction_that_no_later_node_builds_on() -> None:
    before_llm, now_llm = born_first_llm(), born_first_llm()
    reads = {**CONFIDENT, "born": ReaderOutput("Toronto", 6.0)}
    before = run(before_llm, reads, **OFF, confidence_threshold=1.5)
    now = run(now_llm, reads, **{**OFF, "check_on": True}, confidence_threshold=1.5)
    # Without it, round 2 writes the chain again with Toronto (node 1 a duplicate, node 2 checked);
    # with it, IR checks node 2 in round 1 and the run goes on to the tracing.
    assert before["rounds"] == 2 and before["usage"]["llm_calls"] == 3
    assert now["rounds"] == 1 and now["usage"]["llm_calls"] == 2
    assert [(r["query"], r["answer"]) for r in now["references"]] == [
        (r["query"], r["answer"]) for r in before["references"]
    ]
    assert now["references"][0]["answer"] == "Toronto" and now["answer"] == before["answer"]
    assert any("IR checks on" in w for w in now["warnings"])


def test_check_on_still_asks_a_round_when_a_later_query_names_the_corrected_answer() -> None:
    # CHAIN_WRONG's third query names Montreal, the answer IR corrects at node 2.
    off, on = recording_llm(), recording_llm()
    before, now = run(off, **OFF), run(on, **{**OFF, "check_on": True})
    assert now["rounds"] == before["rounds"] == 3
    assert len(on.calls) == len(off.calls) and now["answer"] == before["answer"]
    assert not any("IR checks on" in w for w in now["warnings"])


def test_builds_on_reads_the_later_queries_content_words() -> None:
    chain = [
        {"index": 1, "query": "When was the band formed?", "answer": "1998.", "unsolved": False},
        {"index": 2, "query": "Where was Kevin Drew born?", "answer": "Toronto.", "unsolved": False},
        {"index": 3, "query": "Which buses leave from Toronto?", "answer": "Greyhound.", "unsolved": False},
    ]
    assert builds_on(chain, 2, "Toronto.")
    assert not builds_on(chain, 1, "1998.")
    assert not builds_on(chain, 3, "Greyhound.")  # no later node
    assert builds_on(chain, 1, "The.")  # no content word: a new round, as without the switch


def test_compose_supported_saves_the_tracing_call_when_ir_stands_behind_every_step() -> None:
    before_llm, now_llm = recording(correcting_llm()), recording(correcting_llm())
    before, now = run(before_llm, CONFIDENT, **OFF), run(now_llm, CONFIDENT, **{**OFF, "compose_supported": True})
    # Round 2's chain passes IR whole, ends on the path's last answer and concludes with it.
    assert before["usage"]["llm_calls"] == 3 and len(tracing_calls(before_llm)) == 1
    assert now["usage"]["llm_calls"] == 2 and tracing_calls(now_llm) == []
    assert now["answer"] == before["answer"] == "Toronto Coach Terminal"
    assert "[1]" in now["final_content"] and "[3]" in now["final_content"]
    assert now["final_content"].endswith("So the final answer is Toronto Coach Terminal.")


def test_stop_at_final_stops_each_chain_where_its_final_content_begins() -> None:
    llm = recording(correcting_llm())
    out = run(llm, CONFIDENT, stop_at_final=True, compose_supported=True)
    assert llm.stops[:2] == [[FINAL_MARKER], [FINAL_MARKER]] and llm.stops[2] is None  # the tracing is not cut
    assert all(b["final_content"] is None for b in out["tree"]) and out["answer"] == "Toronto Coach Terminal"
    assert len(tracing_calls(llm)) == 1  # a chain that concludes nothing is traced
    plain = recording_llm()
    run(plain, **OFF)
    assert plain.stops and all(s is None for s in plain.stops)  # off: no call is cut


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
    unsure = {**CONFIDENT, "performer": ReaderOutput("Broken Social Scene", 0.5)}  # g is not the LLM's answer
    llm = recording(correcting_llm())
    out = run(llm, unsure, **{**OFF, "compose_supported": True})
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
    concludes = "He was born in Toronto [2]. So the final answer is Toronto."
    branch: Any = {"checks": [{"query": "q1", "action": "pass"}, {"query": "q2", "action": "pass"}]}
    branch["final_content"] = concludes
    assert supported_answer(path, branch, "Where was he born?") == "Toronto"
    corrected = [path[0], _ref(2, "q2", "Toronto", "Toronto", "corrected")]
    assert supported_answer(corrected, branch, "Where was he born?") == "Toronto"
    # Not when a node was left unreached, the chain ends elsewhere, a step is unconfirmed, or the
    # question compares.
    cut: Any = {"checks": [{"query": "q1", "action": "correction"}, {"query": "q2", "action": "not_reached"}]}
    cut["final_content"] = concludes
    assert supported_answer(path, cut, "Where was he born?") is None
    elsewhere: Any = {"checks": [{"query": "q1", "action": "pass"}, {"query": "q3", "action": "pass"}]}
    elsewhere["final_content"] = concludes
    assert supported_answer(path, elsewhere, "Where was he born?") is None
    repeated: Any = {"checks": [{"query": "q2b", "action": "duplicate", "duplicate_of": {"query": "q2"}}]}
    repeated["final_content"] = concludes
    assert supported_answer(path, repeated, "Where was he born?") == "Toronto"
    unconfirmed = [path[0], _ref(2, "q2", "Montreal", "Toronto")]
    assert supported_answer(unconfirmed, branch, "Where was he born?") is None
    assert supported_answer(path, branch, "Who was born first, Kevin Drew or Feist?") is None
    assert supported_answer([], branch, "Where was he born?") is None
    # The chain concluded with its last node as the LLM wrote it; IR changed that node: IR's answer.
    wrote = {**branch, "nodes": [{"index": 2, "query": "q2", "answer": "Montreal"}]}
    wrote["final_content"] = "So the final answer is Montreal."
    assert supported_answer(corrected, wrote, "Where was he born?") == "Toronto"
    # A chain that concluded otherwise (or nothing) is traced.
    for other in ("So the final answer is Montreal.", None):
        assert supported_answer(path, {**branch, "final_content": other}, "Where was he born?") is None


def test_the_tuned_preset_saves_calls_and_begins_later_rounds_only_for_a_model_that_continues() -> None:
    from searchain_graph.llms.chat_model import TransformersChatModel
    from searchain_graph.method.graph import continues_begun_reply, reader_settings

    tuned = Context().resolved(threshold=1.0, reader_yes_no=False)
    assert (tuned.close_early, tuned.check_on, tuned.compose_supported, tuned.stop_at_final) == (
        True,
        True,
        False,
        True,
    )
    assert (
        tuned.continuation == "fresh"
        and Context().resolved(threshold=1.0, reader_yes_no=False, continues=True).continuation == "path"
    )
    paper = Context(preset="paper").resolved(threshold=1.0, reader_yes_no=False, continues=True)
    assert (paper.close_early, paper.check_on, paper.compose_supported, paper.continuation) == (
        False,
        False,
        False,
        "fresh",
    )
    local = TransformersChatModel(model_path="/nowhere")  # not loaded: only its class is asked
    assert continues_begun_reply(local) and continues_begun_reply(local.with_retry())
    assert not continues_begun_reply(tree_llm())  # an OpenAI-style model starts a new turn
    reader = ScriptedReader(TREE_READS)
    assert reader_settings(reader, continues=True)[0].continuation == "path"
    assert reader_settings(reader, continuation="fresh", continues=True)[0].continuation == "fresh"
