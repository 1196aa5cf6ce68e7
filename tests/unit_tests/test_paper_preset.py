# ruff: noqa: E501  (the figures are the PDF's lines as they are)
"""``Context(preset="paper")``: the paper's prompts as its figures print them, and none of the adaptations.

The figures below are the text of the paper's PDF (arXiv 2304.14732: Figure 3 on page 4, Figure 11
on page 12, the feedback templates of Section 3.3), as its text layer gives them, line breaks and
garbled quotes included. Prompt and figure are compared without whitespace, so that the PDF's line
breaks ("base d on") do not count and every word, bracket and punctuation mark does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage

from searchain_graph import Context, ReaderOutput, create_searchain_graph
from searchain_graph.method.verdict import ir_verdict
from tests.fakes import (
    CHAIN_FIXED,
    CHAIN_UNSOLVED,
    CHAIN_WRONG,
    QUESTION,
    RuleChatModel,
    ScriptedReader,
    is_tracing,
    retriever,
    tracing_reply,
)

PAPER = (
    Path(__file__).resolve().parents[3] / "shared" / "papers" / "searchain-arxiv-2304.14732-pdf-with-figure-prompts.txt"
)

FIGURE_3 = """Construct a global reasoning chain for this complex [Question] : Where do 
Greyhound buses that are in the birthplace of Spirit If...'s performer leave from? 
You should generate a query to the search engine based on what you already 
know at each step of the reasoning chain, starting with [Query]. 
If you know the answer for [Query], generate it starting with [Answer].
You can try to generate the final answer for the [Question] by referring to the 
[Query]-[Answer] pairs, starting with [Final Content].
If you don't know the answer, generate a query to search engine based on what 
you already know and do not know, starting with [Unsolved Query].
For example:
[Question]: Where do Greyhound buses that are in the birthplace of Spirit If...'s 
performer leave from? 
[Query 1]: Who is the performer of Spirit If... ?
If you don't know the answer:
[Unsolved Query]: Who is the performer of Spirit If... ?
If you know the answer:
[Answer 1]: The performer of Spirit Ifâ€¦ is Kevin Drew.
[Query 2]: Where was Kevin Drew born?
If you don't know the answer:
[Unsolved Query]: Where was Kevin Drew born?
If you know the answer:
[Answer 2]: Toronto.
[Query 3]: Where do greyhound buses in Toronto leave from?
If you don't know the answer:
[Unsolved Query]: Where do greyhound buses in Toronto leave from?
If you know the answer:
[Answer 3]: Toronto Coach Terminal.
[Final Content]: The performer of Spirit Ifâ€¦ is Kevin Drew [1]. Kevin Drew 
was born in Toronto [2]. Greyhound buses in Toronto leave from Toronto 
Coach Terminal [3]. So the final answer is Toronto Coach Terminal."""

FIGURE_11 = """Construct a global reasoning chain for this complex [Question] : " {} " You should generate a query to the search engine base d on 
what you already know at each step of the reasoning chain, starting with [Query]. 
If you know the answer for [Query], generate it starting with [Answer].
You can try to generate the final answer for the [Question] by referring to the [Query] -[Answer] pairs, starting with [Final 
Content].
If you don't know the answer, generate a query to search engine based on what you already know and do not know, starting with
[Unsolved Query].
For example:
[Question]: "Where do greyhound buses that are in the birthplace of Spirit If...'s performer leave from? "
[Query 1]: Who is the performer of Spirit If... ?If you don't know the answer:
[Unsolved Query]: Who is the performer of Spirit If... ?If you know the answer:
[Answer 1]: The performer of Spirit Ifâ€¦ is Kevin Drew.
[Query 2]: Where was Kevin Drew born?
If you don't know the answer:
[Unsolved Query]: Where was Kevin Drew born?
If you know the answer:
[Answer 2]: Toronto.[Query 3]: Where do greyhound buses in Toronto leave from?
If you don't know the answer:
[Unsolved Query]: Where do greyhound buses in Toronto leave from?
If you know the answer:
[Answer 3]: Toronto Coach Terminal.[Final Content]: The performer of Spirit Ifâ€¦ is Kevin Drew [1]. Kevin Drew was born in Toronto [2]. Greyhound buses in 
Toronto leave from Toronto 
Coach Terminal [3]. So the final answer is Toronto Coach Terminal.
[Question]:"Which magazine was started first Arthurâ€™s Magazine or First for Women?"
[Query 1]: When was Arthurâ€™s Magazine started?
[Answer 1]: 1844.[Query 2]: When was First for Women started?
[Answer 2]: 1989
[Final Content]: Arthurâ€™s Magazine started in 1844 [1]. First for Women started in 1989 [2]. So Arthurâ€™s Magazine was started
first. So the answer is Arthurâ€™s Magazine."""

# Section 3.3, with q_i, g (g*), Q and d_i as the placeholders the prompt fills.
VERIFICATION = (
    "According to the Reference, the answer for {query} should be {answer}, you can change your answer and "
    "continue constructing the reasoning chain for [Question]: {question}. Reference: {reference}."
)
COMPLETION = (
    "According to the Reference, the answer for {query} should be {answer}, you can give your answer and "
    "continue constructing the reasoning chain for [Question]: {question}. Reference: {reference}."
)


def words(text: str) -> str:
    """``text`` with the PDF's garbled quotes and ellipses read as ASCII, and no whitespace."""
    for garbled, plain in (("â€¦", "..."), ("â€™", "'"), ("â€œ", '"'), ("â€\x9d", '"'), ("…", "..."), ("’", "'")):
        text = text.replace(garbled, plain)
    return re.sub(r"\s+", "", text)


@pytest.mark.skipif(not PAPER.is_file(), reason="the paper's text is not beside this checkout")
def test_the_figures_here_are_the_paper_s_text() -> None:
    paper = words(PAPER.read_text(encoding="utf-8"))
    for figure in (FIGURE_3, FIGURE_11):
        assert words(figure) in paper


def recording_llm(calls: list[list[BaseMessage]]) -> RuleChatModel:
    """Round 1: a chain whose node 2 IR corrects; round 2: one with an unsolved node; then it traces."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        calls.append(list(messages))
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        return CHAIN_UNSOLVED if len(calls) > 1 else CHAIN_WRONG

    return RuleChatModel(respond=respond)


READS = {
    "performer": ReaderOutput("Kevin Drew", 4.0),
    "born": ReaderOutput("Toronto", 3.0),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 2.5),
}


def paper_run() -> tuple[list[list[BaseMessage]], dict[str, object]]:
    calls: list[list[BaseMessage]] = []
    graph = create_searchain_graph(
        recording_llm(calls), retriever(), ScriptedReader(READS), Context(preset="paper", max_rounds=3)
    )
    return calls, graph.invoke({"question": QUESTION})


def test_the_paper_preset_asks_with_figure_11_and_figure_3_word_for_word() -> None:
    calls, _ = paper_run()
    (first,) = calls[0]  # one user message: the paper's layout
    assert isinstance(first, HumanMessage)
    prompt = first.text
    # Figure 11 (the multi-hop datasets' prompt), the question in its "{}"; the one addition is the
    # closing [Question] line of the authors' code, which the prompts module documents.
    rendered = prompt.replace(QUESTION, " {} ", 1)
    closing = f'[Question]: "{QUESTION}"'
    assert rendered.rstrip().endswith(closing)
    assert words(rendered.rstrip().removesuffix(closing)) == words(FIGURE_11)
    # Figure 3: its instruction with the question in quotes (as Figure 11 prints it), and its
    # worked example's chain, every line of it.
    instruction, example = FIGURE_3.split("For example:\n")
    asked = "Where do Greyhound buses that are in the birthplace of Spirit If...'s performer leave from?"
    instruction = instruction.replace(f"[Question] : {words(asked)}", "")
    ours = words(prompt)
    head = words(instruction.split("[Question] :")[1].split("You should", 1)[1])
    assert "Youshould" + head in ours
    chain = example.split("performer leave from? \n", 1)[1]
    assert words(chain) in ours


def test_the_paper_preset_feeds_back_with_section_3_3_s_templates() -> None:
    calls, out = paper_run()
    correction = calls[1][-1].text  # round 2 answers IR's correction of node 2 (Montreal -> Toronto)
    completion = calls[2][-1].text  # round 3 answers IR's completion of the unsolved query
    tree = out["tree"]
    assert [b["parent"]["kind"] for b in tree[1:]] == ["correction", "completion"]  # type: ignore[index]
    for sent, template, query, answer in (
        (correction, VERIFICATION, "Where was Kevin Drew born?", "Toronto"),
        (completion, COMPLETION, "Where do greyhound buses in Toronto leave from?", "Toronto Coach Terminal"),
    ):
        reference = sent.split("Reference: ", 1)[1]
        expected = template.format(query=query, answer=answer, question=QUESTION, reference=reference)
        # The section's sentence ends "[Question]: Q. Reference: d_i."; the prompt puts the
        # reference on a line of its own, without the two full stops of the prose.
        assert (
            words(sent) == words(expected).replace(f"{words(QUESTION)}.Reference:", f"{words(QUESTION)}Reference:")[:-1]
        )


def test_the_paper_preset_turns_every_adaptation_off() -> None:
    _, out = paper_run()
    # The paper keeps the tracing output as the LLM wrote it, and a chain as the LLM wrote it.
    assert not any("composed from the path" in w or "treated as unsolved" in w for w in out["warnings"])  # type: ignore[union-attr]
    resolved = Context(preset="paper").resolved(threshold=1.5, reader_yes_no=False)
    assert resolved.verify_yes_no is True and resolved.duplicates == "text"


def _graph(respond: Any, **settings: Any) -> Any:
    settings = {"tracing": "pairs", **settings}  # tracing_checks is switched on the paper's tracing output
    return create_searchain_graph(RuleChatModel(respond=respond), retriever(), ScriptedReader(READS), **settings)


@pytest.mark.parametrize("on", [True, False])
def test_each_adaptation_is_one_switch(on: bool) -> None:
    # chain_repair: an answer that says it is unknown is made an unsolved query (IR completes it).
    unknown = "[Query 1]: Where was Kevin Drew born?\n[Answer 1]: Unknown.\n[Final Content]: Kevin Drew."
    out = _graph(lambda m: tracing_reply(m) or unknown, chain_repair=on, max_rounds=1).invoke({"question": QUESTION})
    assert out["tree"][0]["checks"][0]["action"] == ("completion" if on else "correction")
    # tracing_checks: a tracing output that cites nothing is replaced by content composed from the path.
    uncited = _graph(lambda m: "Toronto." if is_tracing(m) else CHAIN_FIXED, tracing_checks=on)
    content = uncited.invoke({"question": QUESTION})["final_content"]
    assert ("[1]" in content) is on and (content == "Toronto.") is not on
    # answer_checks: a date read for a query that asks for a place does not overrule the LLM.
    node = {"index": 1, "query": "Where was Denys Desjardins born?", "answer": "Montreal", "unsolved": False}
    result = {"document": {"page_content": "p", "metadata": {}}, "answer": "1966", "confidence": 6.0}
    verdict = ir_verdict(node, result, Context(confidence_threshold=4.0, answer_checks=on))  # type: ignore[arg-type]
    assert verdict["action"] == ("pass" if on else "correction")
    # option_answers: an answer that names neither option of "A or B?" becomes the option it is linked to.
    question = "Which film has the director born later, Alpha Dawn or Beta Dusk?"
    chain = (
        "[Query 1]: Who directed Alpha Dawn?\n[Answer 1]: Ann Lee.\n[Query 2]: Who directed Beta Dusk?\n"
        "[Answer 2]: Bo Kim.\n[Final Content]: So the final answer is Bo Kim."
    )
    traced = "[Final Content]: Ann Lee directed it [1]. Bo Kim directed it [2]. So the final answer is Bo Kim."
    options = _graph(lambda m: traced if is_tracing(m) else chain, option_answers=on, max_rounds=1)
    assert options.invoke({"question": question})["answer"] == ("Beta Dusk" if on else "Bo Kim")
