"""Text that enters a run from the LLM, the retriever or the question, in the classes that broke it.

Each test uses the smallest input that showed the class: citations with thousands of digits,
citations inside citations, lone surrogates, replies and passages without bound, and a chain
with no node, whose answer used to be the bare marker.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever

from searchain_graph import create_searchain_graph
from searchain_graph.baselines import create_cot_graph, create_ircot_graph
from searchain_graph.method.limits import MAX_ANSWER_CHARS, MAX_FINAL_CONTENT_CHARS, MAX_PASSAGE_CHARS, MAX_REPLY_CHARS
from searchain_graph.method.parsing import citations, clean_answer, drop_invalid_citations, extract_final_answer
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, is_tracing, retriever, tree_llm

CHAIN = (
    "[Query 1]: Who is the performer of Spirit If...?\n[Answer 1]: Kevin Drew.\n"
    "[Final Content]: Kevin Drew [1]. So the final answer is Kevin Drew."
)


def llm(chain: str, traced: str | None = None) -> RuleChatModel:
    """Writes ``chain`` to the CoQ prompt and ``traced`` (default: ``chain``) to the tracing prompt."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        return (traced if traced is not None else chain) if is_tracing(messages) else chain

    return RuleChatModel(respond=respond)


def run(model: RuleChatModel, question: str = QUESTION, **kwargs: Any) -> dict[str, Any]:
    kwargs = {
        "tracing": "pairs",
        **kwargs,
    }  # the replies below are the paper's tracing's (test_tracing_passages: the reader's)
    graph = create_searchain_graph(model, kwargs.pop("retriever", retriever()), ScriptedReader(TREE_READS), **kwargs)
    out: dict[str, Any] = graph.invoke({"question": question})
    json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8")  # every string encodes
    return out


# -- numbers of thousands of digits ------------------------------------------------------------------


def test_a_citation_of_five_thousand_digits_is_no_citation() -> None:
    huge = "9" * 5_000
    assert citations(f"A [{huge}] B [1]") == [1]
    cleaned, bad = drop_invalid_citations(f"A [{huge}] B [1].", 3)
    assert cleaned == "A B [1]." and bad == [-1]
    out = run(llm(CHAIN, f"[Final Content]: Kevin Drew [1][{huge}]. So the final answer is Kevin Drew."))
    assert huge not in out["final_content"] and out["answer"] == "Kevin Drew"
    assert any("do not exist: [-1]" in w for w in out["warnings"])


# -- citations inside citations ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kept", "removed"),
    [
        ("A [1[5]0].", [], [5]),  # dropping [5] once made [10]
        ("A [1[2]].", [], [2]),
        ("A [[1]] and [1][2] and [1 [3]].", [1, 2], [1, 3]),
        ("A [1][7][2].", [1, 2], [7]),
    ],
)
def test_dropping_an_inner_citation_makes_no_new_one(text: str, kept: list[int], removed: list[int]) -> None:
    cleaned, bad = drop_invalid_citations(text, 10 if "[10]" in text else 2)
    assert citations(cleaned) == kept and bad == removed
    assert drop_invalid_citations(cleaned, 2) == (cleaned, [])


@pytest.mark.parametrize("final", ["the final answer is Paris [1[2]].", "the final answer is Paris [[1]]."])
def test_no_citation_is_left_in_an_extracted_answer(final: str) -> None:
    assert extract_final_answer(final) == "Paris"


# -- lone surrogates -----------------------------------------------------------------------------------


def test_lone_surrogates_in_the_llms_reply_are_replaced_and_said() -> None:
    chain = CHAIN.replace("Kevin Drew.", "Kevin\ud800 Drew.")
    out = run(llm(chain, "[Final Content]: Kevin Drew [1]\udfff. So the final answer is Kevin Drew\ud800."))
    assert "\ud800" not in json.dumps(out, ensure_ascii=False) and "\ufffd" in out["answer"]
    assert any("lone surrogate(s), replaced by U+FFFD" in w for w in out["warnings"])


def test_a_lone_surrogate_in_the_question_is_replaced_and_said() -> None:
    out = run(tree_llm(), QUESTION + " \ud800")
    assert out["question"].endswith("\ufffd")
    assert any("the question held 1 lone surrogate(s)" in w for w in out["warnings"])


def test_a_baseline_survives_surrogates_too() -> None:
    reply = "Kevin Drew was born in Toronto\udc80. So the answer is: Toronto\ud800."
    out = create_ircot_graph(llm(reply), retriever()).invoke({"question": QUESTION + "\udfff"})
    json.dumps(out, ensure_ascii=False).encode("utf-8")
    assert "\ufffd" in out["answer"] or out["answer"] == "Toronto"
    assert any("lone surrogate" in w for w in out["warnings"])


# -- unbounded text ------------------------------------------------------------------------------------


def test_a_100k_untagged_reply_does_not_become_the_answer_whole() -> None:
    out = run(llm("word " * 20_000))
    assert len(out["answer"]) <= MAX_ANSWER_CHARS and len(out["final_content"]) <= MAX_FINAL_CONTENT_CHARS
    assert any(f"the LLM's reply was cut to {MAX_REPLY_CHARS:,} characters" in w for w in out["warnings"])
    base = create_cot_graph(llm("word " * 20_000)).invoke({"question": QUESTION})
    assert len(base["answer"]) <= MAX_ANSWER_CHARS and len(base["final_content"]) <= MAX_FINAL_CONTENT_CHARS
    assert any(f"the answer was cut to {MAX_ANSWER_CHARS:,} characters" in w for w in base["warnings"])


class HugePassage(BaseRetriever):
    """Returns one passage of a megabyte, whatever the query."""

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [Document("Kevin Drew " + "x" * 1_000_000, metadata={"title": "Kevin Drew", "id": "1"})]


def test_a_megabyte_passage_is_cut_before_any_prompt() -> None:
    model = tree_llm()
    out = run(model, retriever=HugePassage())
    longest = max(sum(len(m.text) for m in call) for call in model.calls)
    assert longest < 3 * MAX_PASSAGE_CHARS + 10_000
    assert any(f"a retrieved passage was cut to {MAX_PASSAGE_CHARS:,} characters" in w for w in out["warnings"])
    assert all(len(r["document"]["page_content"]) <= MAX_PASSAGE_CHARS for r in out["references"])


# -- a marker as the answer ----------------------------------------------------------------------------


@pytest.mark.parametrize("reply", ["[Unsolved Query]", "[Unsolved Query]: ", "If you don't know the answer:"])
def test_no_answer_is_a_bare_marker_or_a_prompt_fragment(reply: str) -> None:
    out = run(llm(reply))
    # The chain has no node: the question itself is completed by IR, whose g is the answer.
    assert out["answer"] == clean_answer(out["answer"]) == out["references"][0]["reader_answer"] != ""
    silent = RuleChatModel(respond=lambda messages: reply)  # no node and no tracing reply either
    none = create_searchain_graph(silent, retriever(), ScriptedReader({}), max_rounds=1).invoke({"question": "Q?"})
    assert none["answer"] == "" and any("the run has no answer" in w for w in none["warnings"])
    base = create_cot_graph(llm(reply)).invoke({"question": QUESTION})
    assert base["answer"] == "" and "the LLM stated no answer" in base["warnings"]


def test_an_ordinary_answer_is_left_as_it_is() -> None:
    assert clean_answer(" Toronto Coach Terminal. ") == "Toronto Coach Terminal."
