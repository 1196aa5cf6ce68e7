"""Unit tests of the baseline graphs with a rule-based LLM, real BM25 and scripted retrievers/readers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from pydantic import Field

from searchain_graph import InvalidQuestionError, ReaderOutput, parse_chain
from searchain_graph.baselines import (
    create_cot_graph,
    create_direct_graph,
    create_direct_retrieval_graph,
    create_ircot_graph,
    create_searchain_no_ir_graph,
    create_self_ask_graph,
    final_answer,
    first_sentence,
    reasoning_steps,
)
from searchain_graph.ir.readers.base import Passage
from tests.fakes import (
    CHAIN_FIXED,
    PASSAGES,
    QUESTION,
    RuleChatModel,
    RunCollector,
    ScriptedReader,
    langsmith_tracer,
    retriever,
)

P1, P2, P3, P4 = PASSAGES
OUTPUT_KEYS = {"question", "answer", "final_content", "rounds", "usage", "passages", "warnings"}


class TableRetriever(BaseRetriever):
    """Returns passages chosen by keyword in the query; records every (query, k)."""

    table: list[tuple[str, list[Document]]]
    calls: list[tuple[str, int | None]] = Field(default_factory=list)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        self.calls.append((query, k))
        for key, docs in self.table:
            if key.lower() in query.lower():
                return list(docs)
        return []


def ids(passages: Sequence[dict[str, Any]]) -> list[str]:
    return [str(p["metadata"]["id"]) for p in passages]


def llm(respond: Callable[[list[BaseMessage]], str]) -> RuleChatModel:
    return RuleChatModel(respond=respond)


def const(text: str) -> RuleChatModel:
    return llm(lambda m: text)


# -- one-shot methods ---------------------------------------------------------------------------


def test_cot_prompt_answer_and_usage() -> None:
    model = const("Kevin Drew was born in Toronto. So the answer is: Toronto Coach Terminal.")
    out = create_cot_graph(model).invoke({"question": QUESTION})
    assert set(out) == OUTPUT_KEYS
    assert out["answer"] == "Toronto Coach Terminal"
    assert out["final_content"].startswith("Kevin Drew was born in Toronto.")
    assert out["rounds"] == 1 and out["passages"] == [] and out["warnings"] == []
    assert out["usage"]["llm_calls"] == 1 and out["usage"]["retrieval_calls"] == 0
    assert out["usage"]["words_in"] > out["usage"]["words_out"] > 0
    prompt = model.calls[0][0].text
    assert prompt.rstrip().endswith(f"Q: {QUESTION}\nA: Let's think step by step.")
    assert prompt.count("So the answer is:") >= 3  # the instruction and two demonstrations


def test_direct_answer_strips_label() -> None:
    model = const("A: Toronto Coach Terminal\nbecause buses leave from it")
    out = create_direct_graph(model).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto Coach Terminal"
    assert out["usage"]["llm_calls"] == 1 and out["rounds"] == 1
    assert model.calls[0][0].text.endswith(f"Q: {QUESTION}\nA:")


def test_direct_retrieval_gives_top_k_passages() -> None:
    ret = TableRetriever(table=[("greyhound", [P3, P2, P1, P4])])
    model = const("Toronto Coach Terminal")
    out = create_direct_retrieval_graph(model, ret, k=2).invoke({"question": QUESTION})
    assert ret.calls == [(QUESTION, 2)]
    assert ids(out["passages"]) == ["p3", "p2"]  # cut to k even when the retriever returns more
    prompt = model.calls[0][0].text
    assert f"Wikipedia Title: Toronto Coach Terminal\n{P3.page_content}" in prompt
    assert P1.page_content not in prompt
    assert prompt.endswith(f"Q: {QUESTION}\nA:")
    assert out["answer"] == "Toronto Coach Terminal"
    assert out["usage"]["retrieval_calls"] == 1 and out["usage"]["llm_calls"] == 1 and out["rounds"] == 1


def test_direct_retrieval_with_bm25_and_no_hits() -> None:
    out = create_direct_retrieval_graph(const("Toronto"), retriever()).invoke({"question": QUESTION})
    assert "p3" in ids(out["passages"])
    model = const("unknown")
    out = create_direct_retrieval_graph(model, TableRetriever(table=[])).invoke({"question": QUESTION})
    assert out["passages"] == [] and any("no passage" in w for w in out["warnings"])
    assert "(No paragraphs were found.)" in model.calls[0][0].text


def test_searchain_no_ir_uses_figure_8() -> None:
    model = const(CHAIN_FIXED)
    out = create_searchain_no_ir_graph(model).invoke({"question": QUESTION})
    prompt = model.calls[0][0].text
    assert prompt.startswith("Construct a global reasoning chain for this complex question [Question]:")
    assert prompt.rstrip().endswith(f'[Question]: "{QUESTION}"')
    assert out["answer"] == "Toronto Coach Terminal"
    assert len(parse_chain(out["final_content"]).nodes) == 3
    assert out["usage"]["llm_calls"] == 1 and out["rounds"] == 1 and out["warnings"] == []
    # No [Final Content]: the chain's last answer.
    out = create_searchain_no_ir_graph(const("[Query 1]: Where was Kevin Drew born?\n[Answer 1]: Toronto.")).invoke(
        {"question": QUESTION}
    )
    assert out["answer"] == "Toronto."


# -- Self-Ask -----------------------------------------------------------------------------------

FOLLOW_UPS = ["Who is the performer of Spirit If...?", "Where was Kevin Drew born?"]


def self_ask_model(final: str = "So the final answer is: Toronto Coach Terminal") -> RuleChatModel:
    """Asks the two follow-ups in turn (each reply overruns into its own answer), then answers."""

    def respond(messages: list[BaseMessage]) -> str:
        if messages[-1].text.startswith("Passage:"):
            return "Toronto\nmore text"
        asked = sum(1 for m in messages if m.type == "ai")
        if asked < len(FOLLOW_UPS):
            prefix = "Yes.\n" if asked == 0 else ""
            return f"{prefix}Follow up: {FOLLOW_UPS[asked]}\nIntermediate answer: made up\nFollow up: more"
        return final

    return llm(respond)


def test_self_ask_with_reader() -> None:
    reader = ScriptedReader({"performer": ReaderOutput("Kevin Drew", 4.0), "born": ReaderOutput("Toronto", 0.1)})
    model = self_ask_model()
    out = create_self_ask_graph(model, retriever(), reader).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto Coach Terminal"
    assert out["rounds"] == 2
    assert out["usage"]["llm_calls"] == 3
    assert out["usage"]["retrieval_calls"] == 2 and out["usage"]["reader_calls"] == 2
    assert ids(out["passages"]) == ["p1", "p2"]
    # The reader saw each follow-up with its top-1 passage (title and text).
    assert [q for batch in reader.batches for q, _ in batch] == FOLLOW_UPS
    assert reader.batches[0][0][1] == Passage(P1.page_content, title="Spirit If...")
    first = model.calls[0]
    assert len(first) == 1 and QUESTION in first[0].text
    assert first[0].text.rstrip().endswith("Are follow up questions needed here:")
    # The model's overrun is cut at "Intermediate answer:"; the search engine's answer follows.
    second = model.calls[1]
    assert second[1].text == f"Yes.\nFollow up: {FOLLOW_UPS[0]}"
    assert second[2].text == "Intermediate answer: Kevin Drew"
    assert model.calls[2][-1].text == "Intermediate answer: Toronto"
    assert out["final_content"] == (
        f"Follow up: {FOLLOW_UPS[0]}\nIntermediate answer: Kevin Drew\n"
        f"Follow up: {FOLLOW_UPS[1]}\nIntermediate answer: Toronto\n"
        "So the final answer is: Toronto Coach Terminal"
    )


def test_self_ask_llm_reads_the_passage_without_reader_or_when_g_is_empty() -> None:
    model = self_ask_model()
    out = create_self_ask_graph(model, retriever()).invoke({"question": QUESTION})
    reads = [c for c in model.calls if c[-1].text.startswith("Passage:")]
    assert len(reads) == 2
    assert P1.page_content in reads[0][-1].text and FOLLOW_UPS[0] in reads[0][-1].text
    assert out["usage"]["llm_calls"] == 5 and out["usage"]["reader_calls"] == 0
    assert "Intermediate answer: Toronto" in out["final_content"]  # first line of the reading only

    reader = ScriptedReader({"performer": ReaderOutput("Kevin Drew", 4.0)})  # no g for "born"
    model = self_ask_model()
    out = create_self_ask_graph(model, retriever(), reader).invoke({"question": QUESTION})
    assert out["usage"]["reader_calls"] == 2 and out["usage"]["llm_calls"] == 4
    assert sum(1 for c in model.calls if c[-1].text.startswith("Passage:")) == 1


def test_self_ask_step_limit_forces_a_final_answer() -> None:
    def stubborn(messages: list[BaseMessage]) -> str:
        if "No more follow up questions can be asked" in messages[-1].text:
            return "Follow up: one more?"
        return f"Follow up: question {len(messages)}?"

    model = llm(stubborn)
    reader = ScriptedReader({"question": ReaderOutput("Toronto", 1.0)})
    ret = TableRetriever(table=[("", [P1])])
    out = create_self_ask_graph(model, ret, reader, max_steps=3).invoke({"question": QUESTION})
    assert out["rounds"] == 3
    assert out["usage"]["llm_calls"] == 4  # three follow-ups, then the forced answer
    assert out["usage"]["retrieval_calls"] == 3
    assert model.calls[-1][-1].text.startswith("Intermediate answer: Toronto\nNo more follow up questions")
    assert any("max_steps=3" in w for w in out["warnings"])
    assert isinstance(out["answer"], str)


def test_self_ask_forced_plain_answer_is_taken() -> None:
    def respond(messages: list[BaseMessage]) -> str:
        if "No more follow up" in messages[-1].text:
            return "Toronto Coach Terminal."
        return "Yes.\nFollow up: Where was Kevin Drew born?"

    reader = ScriptedReader({"born": ReaderOutput("Toronto", 1.0)})
    out = create_self_ask_graph(llm(respond), retriever(), reader, max_steps=1).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto Coach Terminal" and out["rounds"] == 1 and out["warnings"] == []


# -- IRCoT --------------------------------------------------------------------------------------

COT = [
    "Spirit If... was performed by Kevin Drew.",
    "Kevin Drew was born in Toronto.",
    "Greyhound buses in Toronto leave from the Toronto Coach Terminal.",
    "So the answer is: Toronto Coach Terminal.",
]


def ircot_model(sentences: Sequence[str] = COT, reader_reply: str = "Toronto Coach Terminal") -> RuleChatModel:
    """Writes the next sentence of ``sentences`` (followed by the rest, as chat models do)."""

    def respond(messages: list[BaseMessage]) -> str:
        text = messages[-1].text
        if not text.rstrip().endswith(tuple(sentences)) and text.rstrip().endswith("A:"):
            if "Continue the answer" not in text:
                return reader_reply
        done = sum(1 for s in sentences if s in text.rsplit("\nQ: ", 1)[-1])
        return " ".join(sentences[done:]) + "\nQ: another question"

    return llm(respond)


def ircot_retriever() -> TableRetriever:
    return TableRetriever(
        table=[
            ("greyhound buses in toronto", [P3, P2]),
            ("born", [P2, P4]),
            ("performed", [P1, P2]),
            ("greyhound", [P1, P4]),
        ]
    )


def test_ircot_interleaves_retrieval_and_reasoning() -> None:
    model, ret = ircot_model(), ircot_retriever()
    out = create_ircot_graph(model, ret, k=2).invoke({"question": QUESTION})
    # The question, then each sentence before the one that states the answer.
    assert ret.calls == [(QUESTION, 2), (COT[0], 2), (COT[1], 2), (COT[2], 2)]
    assert out["rounds"] == 4 and out["usage"]["retrieval_calls"] == 4
    assert out["usage"]["llm_calls"] == 5  # four sentences and the reader
    # Accumulated, deduplicated, in order.
    assert ids(out["passages"]) == ["p1", "p4", "p2", "p3"]
    reasons = [c[0].text for c in model.calls[:4]]
    assert reasons[0].endswith(f"Q: {QUESTION}\nA:")
    assert reasons[2].endswith(f"Q: {QUESTION}\nA: {COT[0]} {COT[1]}")
    shown = [r.rsplit("So the answer is: Germany.", 1)[1] for r in reasons]
    assert [s.count("Wikipedia Title:") for s in shown] == [2, 3, 3, 4]  # p1 p4 | +p2 | (p2 p4 held) | +p3
    assert P3.page_content not in shown[2] and P3.page_content in shown[3]
    reader_prompt = model.calls[4][0].text
    assert "Continue the answer" not in reader_prompt
    assert all(p.page_content in reader_prompt for p in PASSAGES)
    assert out["answer"] == "Toronto Coach Terminal" and out["final_content"] == "Toronto Coach Terminal"


def test_ircot_cot_mode_parses_the_chain() -> None:
    model = ircot_model()
    out = create_ircot_graph(model, ircot_retriever(), k=2, answer_mode="cot").invoke({"question": QUESTION})
    assert out["usage"]["llm_calls"] == 4
    assert out["final_content"] == " ".join(COT)
    assert out["answer"] == "Toronto Coach Terminal"


def test_ircot_step_limit_and_paragraph_cap() -> None:
    never = ["Kevin Drew was born in Toronto.", "Greyhound buses stop there.", "Toronto is big.", "Buses go."]
    model, ret = ircot_model(never, reader_reply="Toronto"), ircot_retriever()
    out = create_ircot_graph(model, ret, k=2, max_steps=3, max_paragraphs=2).invoke({"question": QUESTION})
    reasons = [c for c in model.calls if "Continue the answer" in c[0].text]
    assert len(reasons) == 3
    assert len(ret.calls) == 4 and out["rounds"] == 4  # the question and all three sentences
    assert out["usage"]["llm_calls"] == 4
    assert any("max_steps=3" in w for w in out["warnings"])
    # Only the newest two paragraphs are shown; every one shown is in `passages`.
    shown = model.calls[-1][0].text.rsplit("A: Germany", 1)[1]
    assert shown.count("Wikipedia Title:") == 2
    assert len(out["passages"]) > 2
    assert out["answer"] == "Toronto"
    # cot mode with no stated answer falls back to the reader.
    out = create_ircot_graph(ircot_model(never, "Toronto"), ircot_retriever(), max_steps=2, answer_mode="cot").invoke(
        {"question": QUESTION}
    )
    assert out["answer"] == "Toronto" and any("reader answers instead" in w for w in out["warnings"])


def test_ircot_step_limit_with_bm25() -> None:
    model = const("Kevin Drew was born in Toronto.")  # repeats itself: no new sentence after step 1
    out = create_ircot_graph(model, retriever(), max_steps=6).invoke({"question": QUESTION})
    assert out["usage"]["llm_calls"] == 3  # two reasoning steps and the reader
    assert any("no new sentence" in w for w in out["warnings"])


def test_reasoning_steps_count_cot_sentences_before_the_answer() -> None:
    cot = "A: Spirit If... is by Kevin Drew. Kevin Drew was born in Toronto.\nSo the answer is: Toronto."
    assert reasoning_steps(cot) == 2
    assert reasoning_steps("So the answer is: yes.") == 0
    assert reasoning_steps("J. R. R. Tolkien wrote it. He was born in 1892.") == 2
    assert reasoning_steps("") == 0


def test_first_sentence_and_final_answer() -> None:
    assert first_sentence("A: Spirit If... is by Kevin Drew. He was born in Toronto.\nQ: x") == (
        "Spirit If... is by Kevin Drew."
    )
    assert first_sentence("Kevin Drew made it. He was born in Toronto. More.", ["Kevin Drew made it."]) == (
        "He was born in Toronto."
    )
    assert first_sentence("He was born in the U.S. state of Ohio. Yes.") == "He was born in the U.S. state of Ohio."
    assert first_sentence("\n\n  ") == ""
    assert final_answer("So the answer is: yes, it would.", "yesno") == "Yes"
    assert final_answer("no.", "yesno") == "No"
    assert final_answer("It REFUTES the claim", "fact") == "REFUTES"
    assert final_answer("Answer: Toronto.", "multihop") == "Toronto"
    assert final_answer("Step one. So the answer is: It is a contrail. It forms from exhaust.", "longform") == (
        "It is a contrail. It forms from exhaust."
    )


@pytest.mark.parametrize(
    ("factory", "reply", "expected"),
    [
        (create_cot_graph, "Pears float. So the answer is: no, it floats.", "No"),
        (create_direct_graph, "yes", "Yes"),
        (create_searchain_no_ir_graph, "[Final Content]: Pears float [1]. So the final answer is No.", "No"),
    ],
)
def test_yes_no_task(factory: Any, reply: str, expected: str) -> None:
    model = const(reply)
    out = factory(model, task="strategyqa").invoke({"question": "Would a pear sink in water?"})
    assert out["answer"] == expected
    assert '(The answer can only be "Yes" or "No")' in model.calls[0][0].text


def test_task_demonstrations_and_formats() -> None:
    model = const("Telemundo is Spanish-language. So the answer is: REFUTES.")
    out = create_cot_graph(model, task="fever").invoke({"question": "Telemundo is an English network."})
    assert out["answer"] == "REFUTES"
    assert "Nicholas Brody" in model.calls[0][0].text and "SUPPORTS" in model.calls[0][0].text
    model = const("Sunlight is scattered. So the answer is: Air scatters blue light. So the sky is blue.")
    out = create_cot_graph(model, task="eli5").invoke({"question": "Why is the sea blue?"})
    assert out["answer"] == "Air scatters blue light. So the sky is blue."
    model = const("Yes.\nFollow up: Is pear dense?")
    out = create_self_ask_graph(model, retriever(), max_steps=1, task="yesno").invoke({"question": "Pear sinks?"})
    assert "Would a pear sink in water?" in model.calls[0][0].text


# -- robustness, async, tracing, state ----------------------------------------------------------

FACTORIES: dict[str, Callable[[RuleChatModel], Any]] = {
    "cot": lambda m: create_cot_graph(m),
    "direct": lambda m: create_direct_graph(m),
    "searchain_no_ir": lambda m: create_searchain_no_ir_graph(m),
    "direct_retrieval": lambda m: create_direct_retrieval_graph(m, retriever()),
    "self_ask": lambda m: create_self_ask_graph(m, retriever(), ScriptedReader({}), max_steps=2),
    "ircot": lambda m: create_ircot_graph(m, retriever(), max_steps=2),
    "ircot_cot": lambda m: create_ircot_graph(m, retriever(), max_steps=2, answer_mode="cot"),
}


@pytest.mark.parametrize("method", sorted(FACTORIES))
@pytest.mark.parametrize("reply", ["", "[[[[ ]]]] Follow up:", "\x00\x01", "Follow up: x\n" * 50])
def test_malformed_output_never_crashes(method: str, reply: str) -> None:
    model = const(reply)
    out = FACTORIES[method](model).invoke({"question": QUESTION})
    assert set(out) == OUTPUT_KEYS
    assert isinstance(out["answer"], str)
    assert len(model.calls) <= 6


@pytest.mark.parametrize("method", sorted(FACTORIES))
@pytest.mark.parametrize(("question", "message"), [("  ", "question is empty"), ("x" * 2001, "limit is 2000")])
def test_bad_questions_raise_the_searchain_error(method: str, question: str, message: str) -> None:
    with pytest.raises(InvalidQuestionError, match=message):
        FACTORIES[method](const("x")).invoke({"question": question})


def test_bad_settings() -> None:
    with pytest.raises(ValueError, match="answer_mode"):
        create_ircot_graph(const("x"), retriever(), answer_mode="guess")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be"):
        create_direct_retrieval_graph(const("x"), retriever(), k=0)
    with pytest.raises(ValueError, match="max_steps"):
        create_self_ask_graph(const("x"), retriever(), max_steps=0)
    with pytest.raises(ValueError, match="unknown task"):
        create_cot_graph(const("x"), task="poetry")
    with pytest.raises(TypeError, match="retriever"):
        create_ircot_graph(const("x"), object())  # type: ignore[arg-type]


def scripted(method: str) -> tuple[RuleChatModel, Any]:
    if method == "self_ask":
        model = self_ask_model()
        reader = ScriptedReader({"performer": ReaderOutput("Kevin Drew", 4.0)})
        return model, create_self_ask_graph(model, retriever(), reader)
    if method == "ircot":
        model = ircot_model()
        return model, create_ircot_graph(model, ircot_retriever(), k=2)
    model = const("Kevin Drew was born in Toronto. So the answer is: Toronto Coach Terminal.")
    return model, FACTORIES[method](model)


@pytest.mark.parametrize("method", ["cot", "direct", "searchain_no_ir", "direct_retrieval", "self_ask", "ircot"])
async def test_ainvoke_matches_invoke(method: str) -> None:
    sync_out = scripted(method)[1].invoke({"question": QUESTION})
    async_out = await scripted(method)[1].ainvoke({"question": QUESTION})
    # Exact, floats included: BM25 scores come from the same single-threaded code on the same index
    # (BM25Retriever's async search runs the sync one inline) and reader confidences are the scripted
    # reader's constants, so both runs are bit-identical.
    assert async_out == sync_out


@pytest.mark.parametrize("method", ["cot", "direct", "searchain_no_ir", "direct_retrieval", "self_ask", "ircot"])
def test_langsmith_shows_each_node_once(method: str) -> None:
    tracer, client = langsmith_tracer()
    scripted(method)[1].invoke({"question": QUESTION}, config={"callbacks": [tracer]})
    tracer.wait_for_futures()
    (root_id,) = [rid for rid, run in client.recorded.items() if not run["parent"]]
    calls = [c for n in client.children(root_id) for c in client.children(n["id"]) if "searchain_step" in c["metadata"]]
    assert calls, method  # every LLM, retriever and reader call, with its method, step and round
    assert all(c["metadata"]["searchain_method"] == method and "searchain_round" in c["metadata"] for c in calls)
    for run_id, run in client.recorded.items():
        for child in client.children(run_id):
            assert child["name"] != run["name"], (method, run["name"])


def test_trace_names_and_rounds() -> None:
    collector = RunCollector()
    scripted("ircot")[1].invoke({"question": QUESTION}, config={"callbacks": [collector]})
    runs = [
        (m["searchain_step"], m.get("searchain_round"), m.get("searchain_method"))
        for _, m in collector.runs
        if "searchain_step" in m
    ]
    assert [(n, r) for n, r, _ in runs] == [
        ("retrieve", 1),
        ("reason", 1),
        ("retrieve", 2),
        ("reason", 2),
        ("retrieve", 3),
        ("reason", 3),
        ("retrieve", 4),
        ("reason", 4),
        ("answer", 4),
    ]
    assert {m for _, _, m in runs} == {"ircot"}
    assert "ircot" in [n for n, _ in collector.runs]  # the graph's own name

    collector = RunCollector()
    scripted("self_ask")[1].invoke({"question": QUESTION}, config={"callbacks": [collector]})
    steps = [(m["searchain_step"], m["searchain_round"]) for _, m in collector.runs if "searchain_step" in m]
    assert steps == [
        ("self_ask_generation", 1),
        ("retrieve", 1),
        ("read", 1),
        ("self_ask_generation", 2),
        ("retrieve", 2),
        ("read", 2),
        ("follow_up_answer", 2),
        ("self_ask_generation", 3),
    ]


def test_checkpointed_state_is_msgpack_and_a_new_question_restarts() -> None:
    model = ircot_model()
    graph = create_ircot_graph(model, ircot_retriever(), k=2, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    first = graph.invoke({"question": QUESTION}, config)
    kind, _ = JsonPlusSerializer().dumps_typed(graph.get_state(config).values)
    assert kind == "msgpack"
    again = graph.invoke({"question": QUESTION + " Again?"}, config)
    assert again["question"] == QUESTION + " Again?"
    assert again["rounds"] == first["rounds"] and again["usage"] == {
        **first["usage"],
        "words_in": again["usage"]["words_in"],
        "input_tokens": again["usage"]["input_tokens"],
    }
