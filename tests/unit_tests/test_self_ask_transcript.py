"""Self-Ask's transcript: the search engine's answer written into the model's own reply, which it continues.

The fixtures are Qwen2.5-Coder-1.5B-Instruct's replies (int4, greedy) to the Self-Ask prompt for the
issue's "Kiss and Tell" question, after its first follow-up was answered "Shirley Temple":

* in a user turn ("Intermediate answer: Shirley Temple"), it ended: "So the final answer is: Shirley
  Temple" (the first hop's answer; so it did on each of the 9 HotpotQA questions run so);
* continuing its own reply, it asked the next hop: "Follow up: What was Shirley Temple's role in
  Kiss and Tell?".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver

from searchain_graph import BM25Retriever, ReaderOutput
from searchain_graph.baselines import create_self_ask_graph
from searchain_graph.llms.chat_model import TransformersChatModel
from tests.fakes import RuleChatModel, ScriptedReader

QUESTION = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"
FIRST = "Yes.\nFollow up: Who played Corliss Archer in Kiss and Tell?\n"
IN_A_TURN = "So the final answer is: Shirley Temple"
CONTINUED = "Follow up: What was Shirley Temple's role in Kiss and Tell?\n"
READS = {"Corliss Archer": ReaderOutput("Shirley Temple", 5.0), "role": ReaderOutput("Chief of Protocol", 5.0)}
PAGES = [
    ("Kiss and Tell (1945 film)", "Kiss and Tell is a 1945 film in which Shirley Temple played Corliss Archer."),
    ("Shirley Temple", "Shirley Temple Black was an actress and diplomat; her role: Chief of Protocol."),
]


def retriever() -> BM25Retriever:
    return BM25Retriever.from_documents([Document(text, metadata={"title": title}) for title, text in PAGES], k=1)


class Continuing(RuleChatModel):
    """A chat model that continues a final assistant message, as the local models do."""

    continues_final_message: ClassVar[bool] = True


def recorded(messages: Sequence[BaseMessage]) -> str:
    """The 1.5B's replies: the first follow-up; then the one it wrote in a new turn or continuing its own."""
    last = messages[-1]
    if isinstance(last, HumanMessage) and last.text.startswith("Intermediate answer:"):
        return IN_A_TURN
    if isinstance(last, AIMessage):
        if last.text.endswith("So the final answer is:"):
            return " Chief of Protocol"
        return CONTINUED if last.text.count("Follow up:") == 1 else "So the final answer is: Chief of Protocol"
    return FIRST


def test_a_chat_turn_ends_the_1_5b_at_the_first_hop() -> None:
    out = create_self_ask_graph(RuleChatModel(respond=recorded), retriever(), ScriptedReader(READS)).invoke(
        {"question": QUESTION}
    )
    assert out["rounds"] == 1 and out["answer"] == "Shirley Temple"


def test_a_continued_transcript_goes_on_to_the_next_hop() -> None:
    model = Continuing(respond=recorded)
    out = create_self_ask_graph(model, retriever(), ScriptedReader(READS)).invoke({"question": QUESTION})
    assert out["rounds"] == 2 and out["answer"] == "Chief of Protocol"
    # One growing assistant message: each answer written into it, the model continuing it.
    second, third = model.calls[1], model.calls[2]
    assert [type(m) for m in second] == [HumanMessage, AIMessage]
    assert second[-1].text == (
        "Yes.\nFollow up: Who played Corliss Archer in Kiss and Tell?\nIntermediate answer: Shirley Temple\n"
    )
    assert third[-1].text == second[-1].text + (
        "Follow up: What was Shirley Temple's role in Kiss and Tell?\nIntermediate answer: Chief of Protocol\n"
    )
    assert out["final_content"] == (
        "Follow up: Who played Corliss Archer in Kiss and Tell?\nIntermediate answer: Shirley Temple\n"
        "Follow up: What was Shirley Temple's role in Kiss and Tell?\nIntermediate answer: Chief of Protocol\n"
        "So the final answer is: Chief of Protocol"
    )


def test_the_last_allowed_follow_up_begins_the_final_answer() -> None:
    model = Continuing(respond=recorded)
    graph = create_self_ask_graph(model, retriever(), ScriptedReader(READS), max_steps=1, checkpointer=InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": "forced"}}
    out = graph.invoke({"question": QUESTION}, config)
    assert model.calls[-1][-1].text.endswith("Intermediate answer: Shirley Temple\nSo the final answer is:")
    assert out["rounds"] == 1 and out["answer"] == "Chief of Protocol" and out["warnings"] == []
    # The conversation kept holds the begun sentence once, followed by what the model wrote.
    said = graph.get_state(config).values["messages"][-1]["content"]
    assert said.count("So the final answer is:") == 1 and said.endswith("So the final answer is: Chief of Protocol")
    assert out["final_content"].endswith(
        "Intermediate answer: Shirley Temple\nSo the final answer is: Chief of Protocol"
    )


def test_turns_can_be_asked_for_and_local_models_continue() -> None:
    model = Continuing(respond=recorded)
    out = create_self_ask_graph(model, retriever(), ScriptedReader(READS), transcript=False).invoke(
        {"question": QUESTION}
    )
    assert out["answer"] == "Shirley Temple" and isinstance(model.calls[1][-1], HumanMessage)
    assert TransformersChatModel.continues_final_message is True
    assert not getattr(RuleChatModel(respond=recorded), "continues_final_message", False)


def test_every_call_is_bounded_by_the_step_limit() -> None:
    """A model that never stops asking is cut at ``max_steps`` follow-ups in a transcript too."""

    def stubborn(messages: Sequence[BaseMessage]) -> str:
        last = messages[-1]
        if isinstance(last, AIMessage) and last.text.endswith("So the final answer is:"):
            return " Toronto."
        return "Follow up: What was Shirley Temple's role then?\n"

    model = Continuing(respond=stubborn)
    reader = ScriptedReader({"then": ReaderOutput("Toronto", 1.0)})
    out = create_self_ask_graph(model, retriever(), reader, max_steps=3).invoke({"question": QUESTION})
    assert out["rounds"] == 3 and out["usage"]["llm_calls"] == 4 and out["answer"] == "Toronto"
