"""Unit tests of the SearChain graph with a rule-based LLM, real BM25 and a scripted reader."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph
from typing_extensions import TypedDict

from searchain_graph import (
    Context,
    InvalidQuestionError,
    ReaderOutput,
    create_searchain_graph,
)
from searchain_graph.method.verdict import is_yes_no
from searchain_graph.viz.tree import tree_view
from tests.fakes import (
    CHAIN_FIXED,
    CHAIN_WRONG,
    QUESTION,
    RuleChatModel,
    RunCollector,
    ScriptedReader,
    is_tracing,
    langsmith_tracer,
    retriever,
    tracing_reply,
)

CONFIDENT = {
    "performer": ReaderOutput("Kevin Drew", 4.0),
    "born": ReaderOutput("Toronto", 3.0),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 2.5),
}


def correcting_llm() -> RuleChatModel:
    """Writes a wrong chain first; after IR's feedback ("should be Toronto") the right one."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        if "should be Toronto" in messages[-1].text:
            return CHAIN_FIXED
        return CHAIN_WRONG

    return RuleChatModel(respond=respond)


def build(llm: RuleChatModel, reader: ScriptedReader, **kwargs: Any) -> Any:
    """A graph with the paper's tracing, whose output these tests read (test_tracing_passages: the reader's)."""
    return create_searchain_graph(llm, retriever(), reader, **{"tracing": "pairs", **kwargs})


def test_wrong_answer_corrected_when_confident() -> None:
    llm, reader = correcting_llm(), ScriptedReader(CONFIDENT)
    out = build(llm, reader).invoke({"question": QUESTION})

    assert out["rounds"] == 2
    assert [r["source"] for r in out["references"]] == ["llm", "corrected", "llm"]
    assert [r["answer"] for r in out["references"]] == ["Kevin Drew.", "Toronto", "Toronto Coach Terminal."]
    assert out["answer"] == "Toronto Coach Terminal"
    # The correction prompt is the paper's template, with g and the passage.
    feedback = llm.calls[1][-1].text
    assert feedback.startswith(
        "According to the Reference, the answer for Where was Kevin Drew born? should be Toronto"
    )
    assert "you can change your answer and continue constructing the reasoning chain" in feedback
    assert "Reference: Kevin Drew\nKevin Drew (born 9 September 1976 in Toronto)" in feedback
    # The second branch restarts from node 2 of round 1.
    assert out["tree"][1]["parent"] == {
        "round": 1,
        "node": 2,
        "query": "Where was Kevin Drew born?",
        "kind": "correction",
    }
    # Every node's decision is recorded: node 3 was not reached once node 2 was corrected.
    assert [c["action"] for c in out["tree"][0]["checks"]] == ["pass", "correction", "not_reached"]
    assert out["tree"][0]["checks"][2]["reason"] == "IR stopped at node 2"
    assert out["tree"][0]["checks"][1]["reason"] == "f > θ and g is not in the answer"


def test_wrong_answer_kept_when_not_confident() -> None:
    # f == θ is not f > θ; the Montreal-buses node is contradicted with low confidence too.
    table = {
        **CONFIDENT,
        "born": ReaderOutput("Toronto", 1.5),
        "greyhound": ReaderOutput("Toronto Coach Terminal", 0.2),
    }
    llm, reader = correcting_llm(), ScriptedReader(table)
    out = build(llm, reader).invoke({"question": QUESTION})

    assert out["rounds"] == 1
    assert [r["source"] for r in out["references"]] == ["llm", "llm", "llm"]
    assert out["references"][1]["answer"] == "Montreal."
    assert out["references"][1]["reader_answer"] == "Toronto"
    assert len(llm.calls) == 2  # one CoQ generation and the tracing


def test_threshold_is_a_runtime_knob() -> None:
    llm, reader = correcting_llm(), ScriptedReader(CONFIDENT)
    out = build(llm, reader).invoke({"question": QUESTION}, context=Context(confidence_threshold=3.5))
    # f("born") = 3.0 is now below θ: kept; f("performer") = 4.0 passes because the answer agrees.
    assert out["rounds"] == 1
    assert out["references"][1]["source"] == "llm"


def test_threshold_defaults_to_the_readers_own() -> None:
    strict = ScriptedReader(CONFIDENT)
    strict.default_threshold = 3.5  # type: ignore[attr-defined]
    out = build(correcting_llm(), strict).invoke({"question": QUESTION})
    assert out["rounds"] == 1 and out["references"][1]["source"] == "llm"
    # An explicit θ wins over the reader's.
    out = build(correcting_llm(), strict, confidence_threshold=1.5).invoke({"question": QUESTION})
    assert out["rounds"] == 2 and out["references"][1]["source"] == "corrected"


def test_unsolved_query_completed_whatever_the_confidence() -> None:
    unsolved = """[Query 1]: Who is the performer of Spirit If...?
[Answer 1]: Kevin Drew.
[Query 2]: Where was Kevin Drew born?
[Unsolved Query]: Where was Kevin Drew born?"""

    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        if "you can give your answer" in messages[-1].text:
            return CHAIN_FIXED
        return unsolved

    table = {**CONFIDENT, "born": ReaderOutput("Toronto", -7.0)}
    llm, reader = RuleChatModel(respond=respond), ScriptedReader(table)
    out = build(llm, reader).invoke({"question": QUESTION})

    assert out["rounds"] == 2
    assert [r["source"] for r in out["references"]] == ["llm", "completed", "llm"]
    assert out["references"][1]["answer"] == "Toronto"
    assert out["references"][1]["confidence"] == -7.0
    assert llm.calls[1][-1].text.startswith("According to the Reference, the answer for Where was Kevin Drew born?")


def test_completion_can_be_switched_off() -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        return (
            tracing_reply(messages)
            or "[Query 1]: Where was Kevin Drew born?\n[Unsolved Query]: Where was Kevin Drew born?"
        )

    out = build(RuleChatModel(respond=respond), ScriptedReader(CONFIDENT), completion=False).invoke(
        {"question": QUESTION}
    )
    assert out["rounds"] == 1
    assert out["references"] == []
    assert out["tree"][0]["checks"][0]["action"] == "unsolved_kept"


def test_duplicate_queries_are_skipped() -> None:
    llm, reader = correcting_llm(), ScriptedReader(CONFIDENT)
    out = build(llm, reader).invoke({"question": QUESTION})

    # Round 1 reads all three nodes in one batch; round 2 repeats queries 1 and 2 (in M) and
    # re-asks the Toronto query, which is new text and so is read.
    assert len(reader.batches) == 2
    assert [q for q, _ in reader.batches[0]] == [
        "Who is the performer of Spirit If...?",
        "Where was Kevin Drew born?",
        "Where do greyhound buses in Montreal leave from?",
    ]
    assert [q for q, _ in reader.batches[1]] == ["Where do greyhound buses in Toronto leave from?"]
    checks = out["tree"][1]["checks"]
    assert [(c["node"], c["action"]) for c in checks] == [(1, "duplicate"), (2, "duplicate"), (3, "pass")]
    assert [c["duplicate_of"] for c in checks[:2]] == [
        {"round": 1, "node": 1, "query": "Who is the performer of Spirit If...?"},
        {"round": 1, "node": 2, "query": "Where was Kevin Drew born?"},
    ]
    assert out["usage"]["retrieval_calls"] == 4


def test_pluggable_duplicate_matcher() -> None:
    calls: list[tuple[str, tuple[str, ...]]] = []

    def same_first_word(query: str, processed: Sequence[str]) -> bool:
        calls.append((query, tuple(processed)))
        return any(query.split()[0] == p.split()[0] for p in processed)

    llm, reader = correcting_llm(), ScriptedReader(CONFIDENT)
    out = build(llm, reader, is_duplicate=same_first_word).invoke({"question": QUESTION})
    assert calls and calls[0] == ("Who is the performer of Spirit If...?", ())
    # Node 3 ("Where do greyhound buses ...") starts like node 2 ("Where was Kevin Drew born?"): a
    # duplicate by this rule though not by its text. The graph records which query it repeats and
    # the tree draws that record (the text match would call the node "not reached").
    third = out["tree"][0]["checks"][2]
    assert third["action"] == "duplicate"
    assert third["duplicate_of"] == {"round": 1, "node": 2, "query": "Where was Kevin Drew born?"}
    node = tree_view(out)["branches"][0]["nodes"][2]
    assert node["verdict"] == "duplicate" and node["label"] == "duplicate"
    assert node["duplicate_of"]["query"] == "Where was Kevin Drew born?"


def test_max_rounds_respected_by_a_model_that_never_converges() -> None:
    def stubborn(messages: Sequence[BaseMessage]) -> str:
        return tracing_reply(messages) or CHAIN_WRONG.replace("Montreal", f"Montreal{len(messages)}")

    llm, reader = RuleChatModel(respond=stubborn), ScriptedReader(CONFIDENT)
    graph = build(llm, reader, max_rounds=3)
    out = graph.invoke({"question": QUESTION})
    assert out["rounds"] == 3
    assert len(llm.calls) == 4  # three CoQ generations and the tracing
    assert any("stopped at max_rounds=3" in w for w in out["warnings"])

    out = graph.invoke({"question": QUESTION}, context=Context(max_rounds=1))
    assert out["rounds"] == 1


def test_free_text_without_tags_has_the_question_completed_by_ir() -> None:
    llm = RuleChatModel(respond=lambda m: tracing_reply(m) or "I believe the buses leave from a terminal in Toronto.")
    out = build(llm, ScriptedReader(CONFIDENT)).invoke({"question": QUESTION})
    assert any("no [Query]/[Answer] tags" in w for w in out["warnings"])
    # The chain has no node, so the question itself is the node IR completes; the
    # second round's reply has no node either, and the question is then a duplicate.
    assert [(b["round"], [c["action"] for c in b["checks"]]) for b in out["tree"]] == [
        (1, ["completion"]),
        (2, ["duplicate"]),
    ]
    assert [r["query"] for r in out["references"]] == [QUESTION]
    assert out["answer"] == out["references"][0]["answer"] and "[1]" in out["final_content"]


@pytest.mark.parametrize("reply", ["", "[Query 1]:", "[Answer 1]: Toronto", "[[[[ ]]]] [Query", "\x00\x01"])
def test_malformed_output_never_crashes(reply: str) -> None:
    out = build(RuleChatModel(respond=lambda m: reply), ScriptedReader(CONFIDENT)).invoke({"question": QUESTION})
    assert out["rounds"] == 2  # round 1 completes the question itself (no node); round 2 repeats it
    assert isinstance(out["answer"], str) and "[" not in out["answer"]


def test_references_point_at_the_right_passages() -> None:
    llm, reader = correcting_llm(), ScriptedReader(CONFIDENT)
    out = build(llm, reader).invoke({"question": QUESTION})

    assert out["final_content"] == (
        "Kevin Drew [1]. Toronto [2]. Toronto Coach Terminal [3]. So the final answer is Toronto Coach Terminal."
    )
    ids = [r["document"]["metadata"]["id"] for r in out["references"]]
    assert ids == ["p1", "p2", "p3"]
    assert [r["index"] for r in out["references"]] == [1, 2, 3]


def test_invalid_citations_are_removed_and_uncited_output_composed() -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if is_tracing(messages):
            return (
                "[Final Content]: Kevin Drew [1] was born in Toronto [7]. "
                "So the final answer is Toronto Coach Terminal."
            )
        return CHAIN_FIXED

    out = build(RuleChatModel(respond=respond), ScriptedReader(CONFIDENT)).invoke({"question": QUESTION})
    assert out["final_content"] == "Kevin Drew [1] was born in Toronto. So the final answer is Toronto Coach Terminal."
    assert any("do not exist: [7]" in w for w in out["warnings"])

    out = build(
        RuleChatModel(respond=lambda m: "Toronto." if is_tracing(m) else CHAIN_FIXED),
        ScriptedReader(CONFIDENT),
    ).invoke({"question": QUESTION})
    assert out["final_content"].startswith("Who is the performer of Spirit If...: Kevin Drew [1].")
    assert "[3]" in out["final_content"]
    assert out["answer"] == "Toronto Coach Terminal"


def test_content_composed_from_the_path_cites_only_the_path() -> None:
    from searchain_graph.method.adaptations.tracing_checks import compose_from_path

    path: Any = [
        {"index": 1, "query": "Who directed Up, Down, Fragile?", "answer": "Jacques Rivette"},
        {"index": 2, "query": "Who is his spouse?", "answer": "His wife, Julie Rivette [3] [1]."},
    ]
    content = compose_from_path(path, "Julie Rivette")
    assert content == (
        "Who directed Up, Down, Fragile: Jacques Rivette [1]. Who is his spouse: His wife, Julie Rivette [2]. "
        "So the final answer is Julie Rivette."
    )


def test_reader_without_read_batch_reads_one_at_a_time() -> None:
    reader = ScriptedReader(CONFIDENT, batch=False)
    out = build(correcting_llm(), reader).invoke({"question": QUESTION})
    assert out["rounds"] == 2
    assert len(reader.singles) == 4


@pytest.mark.parametrize(
    ("question", "message"),
    [("", "question is empty"), ("   \n ", "question is empty"), ("x" * 2001, "limit is 2000")],
)
def test_bad_questions_get_clear_errors(question: str, message: str) -> None:
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT))
    with pytest.raises(InvalidQuestionError, match=message):
        graph.invoke({"question": question})


def test_bad_settings_get_clear_errors() -> None:
    with pytest.raises(ValueError, match="max_rounds"):
        build(correcting_llm(), ScriptedReader(CONFIDENT), max_rounds=0)
    with pytest.raises(ValueError, match="unknown task"):
        build(correcting_llm(), ScriptedReader(CONFIDENT), task="poetry")
    with pytest.raises(TypeError, match="read"):
        create_searchain_graph(correcting_llm(), retriever(), object())  # type: ignore[arg-type]
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT))
    with pytest.raises(ValueError, match="rouge_threshold"):
        graph.invoke({"question": QUESTION}, context=Context(rouge_threshold=2.0))


async def test_ainvoke_matches_invoke() -> None:
    sync_out = build(correcting_llm(), ScriptedReader(CONFIDENT)).invoke({"question": QUESTION})
    async_out = await build(correcting_llm(), ScriptedReader(CONFIDENT)).ainvoke({"question": QUESTION})
    # Exact, floats included: the confidences are the scripted reader's constants, and the BM25
    # scores and ROUGE-L values come from the same single-threaded code on the same inputs
    # (BM25Retriever's async search runs the sync one inline), so both runs are bit-identical.
    assert async_out == sync_out


def test_batch_runs_each_question() -> None:
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT))
    outs = graph.batch([{"question": QUESTION}, {"question": QUESTION + " Really?"}])
    assert [o["answer"] for o in outs] == ["Toronto Coach Terminal", "Toronto Coach Terminal"]
    outs = asyncio.run(graph.abatch([{"question": QUESTION}]))
    assert outs[0]["rounds"] == 2


def test_stream_updates_show_each_round() -> None:
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT))
    steps = [next(iter(chunk)) for chunk in graph.stream({"question": QUESTION}, stream_mode="updates")]
    assert steps == ["coq_generation", "ir_check", "feedback", "coq_generation", "ir_check", "tracing"]
    rounds = [
        chunk["coq_generation"]["rounds"]
        for chunk in graph.stream({"question": QUESTION}, stream_mode="updates")
        if "coq_generation" in chunk
    ]
    assert rounds == [1, 2]


def test_output_schema_is_narrow() -> None:
    out = build(correcting_llm(), ScriptedReader(CONFIDENT)).invoke({"question": QUESTION})
    assert set(out) == {"question", "answer", "final_content", "references", "rounds", "tree", "usage", "warnings"}
    assert out["usage"]["llm_calls"] == 3
    assert out["usage"]["words_in"] > out["usage"]["words_out"] > 0


def test_composes_as_a_subgraph() -> None:
    class Outer(TypedDict, total=False):
        question: str
        answer: str
        references: list[dict[str, Any]]
        shout: str

    searchain = build(correcting_llm(), ScriptedReader(CONFIDENT))
    outer = StateGraph(Outer)
    outer.add_node("searchain", searchain)
    outer.add_node("shout", lambda s: {"shout": s["answer"].upper()})
    outer.add_edge(START, "searchain")
    outer.add_edge("searchain", "shout")
    outer.add_edge("shout", END)
    out = outer.compile().invoke({"question": QUESTION})
    assert out["shout"] == "TORONTO COACH TERMINAL"
    assert len(out["references"]) == 3


def test_checkpointer_persists_a_msgpack_state() -> None:
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t1"}}
    out = graph.invoke({"question": QUESTION}, config)
    state = graph.get_state(config)
    assert state.values["answer"] == out["answer"]
    kind, _ = JsonPlusSerializer().dumps_typed(state.values)
    assert kind == "msgpack"
    history = list(graph.get_state_history(config))
    assert len(history) >= 7
    # A new question on the same thread starts a new run instead of continuing the old one.
    again = graph.invoke({"question": QUESTION + " Again?"}, config)
    assert again["rounds"] == 2
    assert again["question"] == QUESTION + " Again?"
    assert [r["index"] for r in again["references"]] == [1, 2, 3]


def test_trace_names_each_step_with_its_round() -> None:
    collector = RunCollector()
    build(correcting_llm(), ScriptedReader(CONFIDENT)).invoke({"question": QUESTION}, config={"callbacks": [collector]})
    names = [name for name, _ in collector.runs]
    for node in ("coq_generation", "ir_check", "feedback", "tracing", "retrieve", "read", "ir_check_node"):
        assert node in names, node
    # Calls inside the nodes carry their step and round from the start (any callback handler sees it).
    rounds = {
        (meta.get("searchain_step"), meta.get("searchain_round"))
        for name, meta in collector.runs
        if "searchain_round" in meta and name not in ("coq_generation", "ir_check", "feedback", "tracing")
    }
    assert {("coq_generation", 1), ("coq_generation", 2), ("read", 1), ("read", 2), ("tracing", 2)} <= rounds
    node_checks = [m["searchain_node"] for n, m in collector.runs if n == "ir_check_node"]
    assert node_checks == [1, 2, 3]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_langsmith_sees_one_run_per_node_with_its_round(mode: str) -> None:
    tracer, client = langsmith_tracer()
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT))
    config = {"callbacks": [tracer]}
    if mode == "sync":
        graph.invoke({"question": QUESTION}, config=config)
    else:
        asyncio.run(graph.ainvoke({"question": QUESTION}, config=config))
    tracer.wait_for_futures()
    (root_id,) = [rid for rid, run in client.recorded.items() if not run["parent"]]
    assert client.recorded[root_id]["name"] == "searchain"
    steps = [(r["name"], r["metadata"].get("searchain_round")) for r in client.children(root_id)]
    assert steps == [
        ("coq_generation", 1),
        ("ir_check", 1),
        ("feedback", 1),
        ("coq_generation", 2),
        ("ir_check", 2),
        ("tracing", 2),
    ]
    for run_id, run in client.recorded.items():
        # No run wraps a run of its own name (a node shows once), and every call inside a node
        # carries the node's round.
        for child in client.children(run_id):
            assert child["name"] != run["name"], run["name"]
            if run["parent"] == root_id:
                assert child["metadata"]["searchain_round"] == run["metadata"]["searchain_round"]
        if run["parent"] == root_id:
            assert f"searchain:round:{run['metadata']['searchain_round']}" in run["tags"]


def test_draws_the_graph() -> None:
    mermaid = build(correcting_llm(), ScriptedReader(CONFIDENT)).get_graph().draw_mermaid()
    for edge in ("coq_generation --> ir_check", "feedback --> coq_generation", "tracing --> __end__"):
        assert edge in mermaid
    assert "ir_check -.-> feedback" in mermaid
    assert "ir_check -.-> tracing" in mermaid


def test_answer_falls_back_to_the_llms_own_answer_when_ir_found_none() -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if is_tracing(messages):
            return "I could not write the final content."
        if "you can give your answer" in messages[-1].text:
            return "[Query 1]: Where was Kevin Drew born?\n[Answer 1]: Toronto."
        return "[Query 1]: Where was Kevin Drew born?\n[Unsolved Query]: Where was Kevin Drew born?"

    reader = ScriptedReader({"born": ReaderOutput("", -10.0)})  # the reader finds nothing
    out = build(RuleChatModel(respond=respond), reader).invoke({"question": QUESTION})
    assert [(r["source"], r["answer"]) for r in out["references"]] == [("completed", "")]
    assert (
        out["final_content"]
        == "Where was Kevin Drew born: not found in the passage [1]. So the final answer is Toronto."
    )
    assert out["answer"] == "Toronto"


@pytest.mark.parametrize(
    ("llm_answer", "expected"),
    [
        ("The terminal for intercity buses is on Bay Street; Greyhound buses left from it.", "pass"),
        ("Buses usually depart from a large airport far outside the city.", "correction"),
    ],
)
def test_longform_verification_uses_rouge_l_against_the_passage(llm_answer: str, expected: str) -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if is_tracing(messages):
            return "[Final Content]: Buses left from the Toronto Coach Terminal [1]."
        return f"[Query 1]: Where do greyhound buses in Toronto leave from?\n[Answer 1]: {llm_answer}"

    reader = ScriptedReader(CONFIDENT)
    out = build(RuleChatModel(respond=respond), reader, task="longform", max_rounds=1).invoke({"question": QUESTION})
    check = out["tree"][0]["checks"][0]
    assert check["action"] == expected
    assert (check["rouge_l"] >= 0.35) == (expected == "pass")


class SpanReader(ScriptedReader):
    """A scripted reader that, like every extractive reader, cannot answer yes or no."""

    answers_yes_no = False


@pytest.mark.parametrize(
    ("answer", "yes_no"),
    [
        ("Yes", True),
        ("no.", True),
        ("No, it is not", True),
        (" YES!", True),
        ("No Country for Old Men", False),
        ("Nobody", False),
        ("Toronto", False),
        ("", False),
        (None, False),
    ],
)
def test_yes_no_answers_are_recognised(answer: str | None, yes_no: bool) -> None:
    assert is_yes_no(answer) is yes_no


@pytest.mark.parametrize(
    ("reader_cls", "context", "action"),
    [
        (SpanReader, None, "pass"),  # an extractive reader's span cannot refute "No"
        (SpanReader, Context(verify_yes_no=True), "correction"),  # unless asked to
        (ScriptedReader, None, "correction"),  # a reader that does not say keeps the paper's rule
    ],
)
def test_yes_no_answers_are_verified_only_by_a_reader_that_can_say_yes_or_no(
    reader_cls: type[ScriptedReader], context: Context | None, action: str
) -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if is_tracing(messages):
            return "[Final Content]: Kevin Drew was born in Toronto [1]. So the final answer is No."
        return "[Query 1]: Was Kevin Drew born in Montreal?\n[Answer 1]: No, he was not."

    reader = reader_cls({"born": ReaderOutput("Toronto", 6.0)})
    graph = build(RuleChatModel(respond=respond), reader, task="strategyqa", max_rounds=1)
    out = graph.invoke({"question": "Was Kevin Drew born in Montreal?"}, context=context)
    check = out["tree"][0]["checks"][0]
    assert check["action"] == action
    assert check.get("unverifiable", False) is (action == "pass")
    assert out["answer"] == "No"


def test_yes_no_and_fact_tasks_use_their_prompts_and_answer_formats() -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if is_tracing(messages):
            return "[Final Content]: A pear is less dense than water [1]. So the final answer is No."
        return "[Query 1]: What is the density of a pear?\n[Answer 1]: 0.59 g/cm^3"

    llm = RuleChatModel(respond=respond)
    out = build(llm, ScriptedReader({}), task="strategyqa", demonstrations="instruction").invoke(
        {"question": "Would a pear sink in water?"}
    )
    assert out["answer"] == "No"
    assert '"Is it common to see frost during some college commencements?"' in llm.calls[0][0].text
    assert (
        llm.calls[0][0]
        .text.rstrip()
        .endswith('[Question]: "Would a pear sink in water? (The answer can only be "Yes" or "No")"')
    )

    def fever(messages: Sequence[BaseMessage]) -> str:
        if is_tracing(messages):
            return "[Final Content]: Telemundo is Spanish-language [1]. So the final answer is REFUTES."
        return "[Query 1]: Is Telemundo English-language?\n[Answer 1]: No"

    llm = RuleChatModel(respond=fever)
    fact = build(llm, ScriptedReader({}), task="fact", demonstrations="instruction")
    out = fact.invoke({"question": "Telemundo is an English-language network."})
    assert out["answer"] == "REFUTES"
    assert "Nicholas Brody is a character on Homeland." in llm.calls[0][0].text
