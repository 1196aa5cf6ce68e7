"""The step protocol (method/steps.py): one body for invoke and ainvoke, cost as deltas, runs and rounds."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from searchain_graph.method.driver import StepDriver
from searchain_graph.method.state import Usage, add_usage
from searchain_graph.method.steps import Generate, Read, Retrieve, StepBody, reducers_of
from tests.fakes import RuleChatModel, ScriptedReader, retriever
from tests.unit_tests.test_graph import CONFIDENT


class RagState(TypedDict):
    question: str
    answer: str
    passages: list[dict[str, Any]]
    notes: Annotated[list[str], operator.add]
    usage: Annotated[Usage, add_usage]
    rounds: int
    last_step: NotRequired[str]


@dataclass(frozen=True)
class RagSettings:
    max_question_chars: int = 200


def retrieve(state: RagState, settings: RagSettings) -> StepBody:
    docs = yield Retrieve([state["question"], "Kevin Drew born"], k=2)
    reads = yield Read([(state["question"], docs[1][0])])
    return {"passages": docs[0], "notes": [f"read {reads[0].answer}"]}


def answer(state: RagState, settings: RagSettings) -> StepBody:
    context = "\n".join(d["page_content"] for d in state["passages"])
    text = yield Generate.prompt(f"{context}\n\nQ: {state['question']}\nA:", stop=["\n"])
    return {"answer": text.strip(), "notes": ["answered"]}


def note(state: RagState, settings: RagSettings) -> dict[str, Any]:
    return {"notes": [f"round {state['rounds']}"]}


def rag(llm: RuleChatModel, *, fail: bool = False, checkpointer: Any = None) -> Any:
    driver = StepDriver(
        "rag",
        llm,
        retriever=retriever(),
        reader=ScriptedReader(CONFIDENT),
        settings=RagSettings(),
        fresh={"passages": [], "answer": "", "notes": []},
        state_schema=RagState,
    )

    def broken(state: RagState, settings: RagSettings) -> StepBody:
        yield Generate.prompt("x")
        raise ValueError("the step broke")

    builder = StateGraph(RagState)
    builder.add_node("retrieve", driver.node("retrieve", retrieve, starts_run=True, opens_round=True))
    builder.add_node("note", driver.node("note", note))
    builder.add_node("answer", driver.node("answer", broken if fail else answer))
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "note")
    builder.add_edge("note", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=checkpointer)


def echo_llm() -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        return "Toronto\nand more"

    return RuleChatModel(respond=respond)


async def test_one_body_serves_invoke_and_ainvoke_and_counts_each_call() -> None:
    question = {"question": "Where was Kevin Drew born?"}
    out = rag(echo_llm()).invoke(question)
    assert out == await rag(echo_llm()).ainvoke(question)
    assert out["answer"].startswith("Toronto")
    assert out["notes"] == ["read Toronto", "round 1", "answered"]
    assert len(out["passages"]) == 2 and out["rounds"] == 1 and out["last_step"] == "answer"
    usage = out["usage"]
    assert (usage["llm_calls"], usage["retrieval_calls"], usage["reader_calls"]) == (1, 2, 1)
    assert usage["words_in"] > 0 and usage["words_out"] == 3


def test_a_new_invocation_on_a_thread_starts_afresh() -> None:
    graph = rag(echo_llm(), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"question": "Where was Kevin Drew born?"}, config)
    again = graph.invoke({"question": "Who is the performer of Spirit If...?"}, config)
    assert again["notes"] == ["read Kevin Drew", "round 1", "answered"] and again["rounds"] == 1
    calls = ("llm_calls", "retrieval_calls", "reader_calls")
    assert [again["usage"][c] for c in calls] == [first["usage"][c] for c in calls] == [1, 2, 1]


def test_a_failing_step_names_its_method_step_and_round() -> None:
    with pytest.raises(ValueError, match="the step broke") as caught:
        rag(echo_llm(), fail=True).invoke({"question": "Where was Kevin Drew born?"})
    assert "rag step 'answer' failed in round 1: ValueError: the step broke" in caught.value.__notes__


def test_the_question_is_validated_at_the_entry_step() -> None:
    with pytest.raises(ValueError, match="200") as caught:
        rag(echo_llm()).invoke({"question": "why? " * 100})
    assert any("rag step 'retrieve' failed in round 1" in n for n in caught.value.__notes__)


def test_reducers_are_read_from_the_state_schema() -> None:
    assert set(reducers_of(RagState)) == {"notes", "usage"}
