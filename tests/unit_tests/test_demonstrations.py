"""Where the prompts' demonstrations go: the paper's layout, or earlier chat turns.

The 1.5B copied the demonstration's answer ("Toronto Coach Terminal") into unrelated questions.
``demonstrations="turns"`` puts the same words into earlier turns of the chat; the paper's layout
stays the default and byte-identical to the prompts before the option existed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from searchain_graph import BM25Retriever, Context, ReaderOutput, create_searchain_graph
from searchain_graph.baselines import create_searchain_no_ir_graph
from searchain_graph.evaluation.harness import read_records, run_evaluation
from searchain_graph.evaluation.methods import METHODS
from searchain_graph.method.adaptations.chain_repair import copied_names
from searchain_graph.method.adaptations.turns import (
    coq_turns,
    demonstrations,
    no_ir_turns,
    tracing_turns,
    without_question,
)
from searchain_graph.method.prompts import (
    COQ_DEMONSTRATION_NAMES,
    COQ_PROMPT_NO_IR,
    COQ_PROMPTS,
    TRACING_PROMPT,
)
from searchain_graph.method.verdict import duplicate_rule, normalized_duplicate
from tests.fakes import CHAIN_FIXED, QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tracing_reply
from tests.unit_tests.test_evaluation import example

ASKED = "Who wrote The Hobbit?"


@pytest.mark.parametrize("task", sorted(COQ_PROMPTS))
def test_the_papers_layout_is_the_one_prompt_as_before(task: str) -> None:
    assert coq_turns(task, ASKED) == [("user", COQ_PROMPTS[task].format(question=ASKED))]
    assert no_ir_turns(ASKED) == [("user", COQ_PROMPT_NO_IR.format(question=ASKED))]
    assert tracing_turns(ASKED, "P") == [("user", TRACING_PROMPT.format(question=ASKED, pairs="P"))]


@pytest.mark.parametrize("task", sorted(COQ_PROMPTS))
def test_turns_keep_every_demonstration_word_and_end_with_the_question(task: str) -> None:
    turns = coq_turns(task, ASKED, "turns")
    roles = [r for r, _ in turns]
    assert roles == ["user", "assistant"] * ((len(turns) - 1) // 2) + ["user"]
    one = COQ_PROMPTS[task].format(question=ASKED)
    # Every line of the demonstrations is in the turns, and no "For example:" is left.
    for line in one.split("For example:\n", 1)[1].splitlines():
        assert any(line.strip() in text for _, text in turns), line
    assert not any("For example:" in text for _, text in turns)
    assert turns[-1][1].startswith(one.split('"', 1)[0]) and turns[-1][1].endswith(f'[Question]: "{ASKED}"\n')
    # Each demonstration is a user turn asking its question and an assistant turn with its chain.
    examples = one.split("For example:\n", 1)[1].rsplit("\n[Question]", 1)[0]
    for (_, ask), (_, said), (question, chain) in zip(turns[0::2], turns[1::2], demonstrations(examples), strict=False):
        assert f'"{question}"' in ask
        assert said == chain


def test_tracing_turns_put_the_worked_example_in_an_assistant_turn() -> None:
    turns = tracing_turns(ASKED, "[Query 1]: q\n[Answer 1]: a", "turns")
    assert [r for r, _ in turns] == ["user", "assistant", "user"]
    assert turns[1][1].startswith("[Final Content]:") and "Toronto Coach Terminal" in turns[1][1]
    assert "Toronto" not in turns[2][1] and turns[2][1].endswith("[Answer 1]: a")


@pytest.mark.parametrize("task", sorted(COQ_PROMPTS))
def test_the_system_layout_says_the_instruction_once_and_keeps_the_exchanges(task: str) -> None:
    turns, system = coq_turns(task, ASKED, "turns"), coq_turns(task, ASKED, "system")
    assert system[0][0] == "system" and "{question}" not in system[0][1] and '""' not in system[0][1]
    assert [r for r, _ in system[1:]] == [r for r, _ in turns]
    # The same assistant turns; each user turn is only its question line.
    assert [t for r, t in system if r == "assistant"] == [t for r, t in turns if r == "assistant"]
    for (_, bare), (_, full) in zip(system[1::2], turns[0::2], strict=True):
        assert bare.startswith("[Question]: ") and bare in full
    assert system[-1] == ("user", f'[Question]: "{ASKED}"')
    words = sum(len(t.split()) for _, t in system)
    assert words < sum(len(t.split()) for _, t in turns) - 80
    assert no_ir_turns(ASKED, "system")[0][0] == "system"
    trace = tracing_turns(ASKED, "[Query 1]: q\n[Answer 1]: a", "system")
    assert [r for r, _ in trace] == ["system", "user", "assistant", "user"]
    assert trace[-1][1] == f'[Question]: "{ASKED}"\n[Query 1]: q\n[Answer 1]: a'


@pytest.mark.parametrize(
    ("instruction", "said"),
    [
        ('for this complex [Question] : "{question}" You should ask.', "for this complex [Question]. You should ask."),
        (
            'this complex question [Question]:"{question}" and answer it.',
            "this complex question [Question] and answer it.",
        ),
    ],
)
def test_the_question_is_dropped_from_a_system_instruction(instruction: str, said: str) -> None:
    assert without_question(instruction) == said


def test_the_graph_sends_the_system_layout_as_a_system_message() -> None:
    llm = _recorder()
    create_searchain_graph(llm, retriever(), ScriptedReader(TREE_READS), demonstrations="system").invoke(
        {"question": QUESTION}
    )
    assert [type(m) for m in llm.calls[0]] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
        AIMessage,
        HumanMessage,
    ]
    assert llm.calls[0][-1].text == f'[Question]: "{QUESTION}"'


def test_a_layout_that_does_not_exist_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="demonstrations must be one of instruction, turns, system, got 'chat'"):
        coq_turns("multihop", ASKED, "chat")
    with pytest.raises(ValueError, match="demonstrations must be one of"):
        Context(demonstrations="chat")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="must start with its \\[Question\\] line"):
        demonstrations("[Query 1]: q")


def _recorder() -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        return tracing_reply(messages) or CHAIN_FIXED

    return RuleChatModel(respond=respond)


def test_the_graph_sends_demonstrations_as_turns_and_keeps_them_in_the_conversation() -> None:
    llm = _recorder()
    graph = create_searchain_graph(
        llm, retriever(), ScriptedReader(TREE_READS), demonstrations="turns", tracing="pairs"
    )
    out = graph.invoke({"question": QUESTION})
    first = llm.calls[0]
    assert [type(m) for m in first] == [HumanMessage, AIMessage, HumanMessage, AIMessage, HumanMessage]
    assert "Toronto Coach Terminal" in first[1].text and QUESTION in first[-1].text
    tracing = llm.calls[-1]
    assert [type(m) for m in tracing] == [HumanMessage, AIMessage, HumanMessage]
    assert out["answer"]
    # Per run, the context switches the layout back to the paper's.
    llm.calls.clear()
    graph.invoke({"question": QUESTION}, context=Context(demonstrations="instruction"))
    assert len(llm.calls[0]) == 1


def test_searchain_without_ir_takes_the_layout_too() -> None:
    llm = RuleChatModel(respond=lambda messages: CHAIN_FIXED)
    create_searchain_no_ir_graph(llm, demonstrations="turns").invoke({"question": ASKED})
    assert len(llm.calls[0]) == 5 and "Karmapa" in llm.calls[0][1].text
    with pytest.raises(ValueError, match="demonstrations must be one of"):
        create_searchain_no_ir_graph(llm, demonstrations="both")


def test_duplicate_rules_by_name() -> None:
    assert duplicate_rule(None) is normalized_duplicate
    assert duplicate_rule("text") is normalized_duplicate
    assert duplicate_rule(duplicate_rule("meaning")) is duplicate_rule("meaning")  # one shared encoder
    with pytest.raises(ValueError, match="is_duplicate must be a callable, 'text' or 'meaning', got 'words'"):
        duplicate_rule("words")


@pytest.mark.parametrize(
    ("text", "question", "copied"),
    [
        ("Toronto Coach Terminal", "Where do buses in Columbus leave from?", ["Toronto", "Toronto Coach Terminal"]),
        ("Toronto Coach Terminal", "Where do buses in Toronto leave from?", []),
        ("The Torontonian", "Who founded it?", []),  # token-aligned: no partial words
        ("Kevin Drew [1]", "Who sang it?", ["Kevin Drew"]),
        (None, "Who sang it?", []),
    ],
)
def test_copied_names(text: str | None, question: str, copied: list[str]) -> None:
    assert copied_names(text, question, COQ_DEMONSTRATION_NAMES) == copied


def _llm() -> RuleChatModel:
    return RuleChatModel(respond=lambda messages: tracing_reply(messages) or CHAIN_FIXED)


def test_eval_options_reach_the_methods_that_take_them_and_are_recorded(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    kwargs = {"llm": _llm(), "retriever": retriever(), "reader": ScriptedReader(TREE_READS), "out_path": out}
    options = {"demonstrations": "turns", "duplicates": "text"}
    summary = run_evaluation([example()], ["searchain", "searchain_no_ir", "cot"], options=options, **kwargs)
    assert summary.errors == 0
    by_method = {r["method"]: r for r in read_records(out)}
    assert by_method["searchain"]["options"] == options
    assert by_method["searchain_no_ir"]["options"] == {"demonstrations": "turns"}
    assert "options" not in by_method["cot"]
    # Resuming the same file with other options would mix two settings under one name.
    with pytest.raises(ValueError, match="holds searchain records made with options"):
        run_evaluation([example()], ["searchain"], options={"demonstrations": "instruction"}, **kwargs)
    with pytest.raises(
        TypeError, match="options must be strings, numbers or booleans, so that records name them; not: dup"
    ):
        run_evaluation([example()], ["searchain"], options={"duplicates": normalized_duplicate}, **kwargs)
    # The same options resume (nothing left to run).
    assert run_evaluation([example()], ["searchain"], options=options, **kwargs).ran == 0


def test_a_method_refuses_an_option_it_does_not_take() -> None:
    with pytest.raises(TypeError, match="method 'cot' takes no option demonstrations"):
        METHODS["cot"](_llm(), retriever(), ScriptedReader(TREE_READS), "multihop", demonstrations="turns")
    assert METHODS["searchain"].options_of({"demonstrations": None, "duplicates": "meaning", "x": 1}) == {
        "duplicates": "meaning"
    }


COLUMBUS = "Where do intercity buses in the capital of Ohio leave from?"
COLUMBUS_PASSAGES = [
    Document(page_content="Columbus is the capital of Ohio.", metadata={"id": "c1", "title": "Columbus, Ohio"}),
    Document(
        page_content="Intercity buses in Columbus leave from the Columbus Bus Station on Town Street.",
        metadata={"id": "c2", "title": "Columbus Bus Station"},
    ),
]
COPIED_CHAIN = """[Query 1]: What is the capital of Ohio?
[Answer 1]: Columbus.
[Query 2]: Where do intercity buses in Columbus leave from?
[Answer 2]: Toronto Coach Terminal.
[Final Content]: The capital of Ohio is Columbus [1]. Buses leave from Toronto Coach Terminal [2]."""
EXAMPLE_COPY = (
    "[Final Content]: The performer of Spirit If... is Kevin Drew [1]. Kevin Drew was born in Toronto [2]. "
    "Greyhound buses in Toronto leave from Toronto Coach Terminal [3]. So the final answer is Toronto Coach Terminal."
)


def _columbus(tracing: str | None) -> dict[str, Any]:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if tracing is not None and messages[-1].text.startswith("You can try to generate the final answer"):
            return tracing
        return tracing_reply(messages) or COPIED_CHAIN

    reads = {"capital": ReaderOutput("Columbus", 0.5), "buses": ReaderOutput("Columbus Bus Station", 0.5)}
    graph = create_searchain_graph(
        RuleChatModel(respond=respond),
        BM25Retriever.from_documents(COLUMBUS_PASSAGES, k=1),
        ScriptedReader(reads),
        max_rounds=2,
        tracing="pairs",
    )
    out: dict[str, Any] = graph.invoke({"question": COLUMBUS})
    return out


def test_a_node_answering_with_the_demonstrations_entity_is_completed_by_ir() -> None:
    out = _columbus(None)
    node = out["tree"][0]["nodes"][1]
    assert node["unsolved"] is True
    assert any("names the worked example's Toronto, Toronto Coach Terminal" in w for w in out["warnings"])
    assert out["tree"][0]["checks"][1]["action"] == "completion"
    assert out["answer"] == "Columbus Bus Station"


def test_a_traced_answer_copying_the_worked_example_is_composed_from_the_path() -> None:
    out = _columbus(EXAMPLE_COPY)
    assert "Toronto" not in out["final_content"] and out["answer"] == "Columbus Bus Station"
    assert any("the tracing output repeats the worked example" in w for w in out["warnings"])
    assert "[1]" in out["final_content"]


def test_a_question_about_the_demonstrations_subjects_is_not_a_copy() -> None:
    from searchain_graph.method.adaptations.chain_repair import settle_nodes

    asked = "Where do buses in Toronto leave from?"
    nodes: list[Any] = [{"index": 1, "query": asked, "answer": "Toronto Coach Terminal", "unsolved": False}]
    settled = settle_nodes(nodes, asked, truncated=False, names=COQ_DEMONSTRATION_NAMES)
    assert settled.nodes[0]["unsolved"] is False and not settled.warnings


def test_searchain_records_keep_the_gold_supporting_paragraphs(tmp_path: Path) -> None:
    ex = example()
    ex["paragraphs"] = [
        {"title": "Kevin Drew", "text": "Kevin Drew was born in Toronto.", "is_supporting": True},
        {"title": "Montreal", "text": "Montreal is in Quebec.", "is_supporting": False},
    ]
    out = tmp_path / "r.jsonl"
    reader = ScriptedReader(TREE_READS)
    run_evaluation([ex], ["searchain", "cot"], llm=_llm(), retriever=retriever(), reader=reader, out_path=out)
    records = {r["method"]: r for r in read_records(out)}
    assert records["searchain"]["supporting"] == [{"title": "Kevin Drew", "text": "Kevin Drew was born in Toronto."}]
    assert "supporting" not in records["cot"]


def test_a_traced_statement_that_contradicts_irs_answer_is_composed_from_the_path() -> None:
    """The HotpotQA run's Sachin Warrier tree: the path held IR's "Mumbai", the tracing wrote "Kochi [2]"."""
    against = (
        "[Final Content]: The capital of Ohio is Columbus [1]. Buses there leave from the High Street depot [2]. "
        "So the final answer is Columbus Bus Station."
    )
    out = _columbus(against)
    assert any("cites [2] for a statement without the answer IR gave there" in w for w in out["warnings"])
    assert "High Street" not in out["final_content"] and "Columbus Bus Station [2]" in out["final_content"]
    assert out["answer"] == "Columbus Bus Station"
    agreeing = against.replace("the High Street depot [2]", "the Columbus Bus Station on Town Street [2]")
    kept = _columbus(agreeing)
    assert kept["final_content"] == agreeing.removeprefix("[Final Content]: ")
    assert not any("for a statement without" in w for w in kept["warnings"])


@pytest.mark.parametrize(
    ("content", "against"),
    [
        ("TCS is headquartered in Kochi [2]. So the final answer is Kochi.", [2]),
        ("TCS is headquartered in Mumbai [2]. So the final answer is Mumbai.", []),
        ("He worked at Tata Consultancy Services [1]. It is based in Mumbai [2].", []),  # half of g's words
        ("He worked at Google [1]. It is in Mumbai [2].", []),  # [1] is the LLM's own: not checked
        ("It is in Kochi [1][2]. Mumbai [2].", [2]),
        ("No citation at all.", []),
    ],
)
def test_statements_against_path(content: str, against: list[int]) -> None:
    from searchain_graph.method.adaptations.tracing_checks import statements_against_path

    def ref(index: int, answer: str, source: str) -> Any:
        return {"index": index, "query": "q", "answer": answer, "source": source, "document": None}

    path = [ref(1, "Tata Consultancy Services in Kochi", "llm"), ref(2, "Mumbai, Maharashtra", "corrected")]
    assert statements_against_path(content, path) == against
