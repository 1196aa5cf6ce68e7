"""Tracing over the passages (``Context.tracing``): each step's passage shown to the tracing."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from searchain_graph import Context, ReaderOutput, create_searchain_graph
from searchain_graph.cli.settings import context_of
from searchain_graph.method.adaptations.tracing_passages import PASSAGE_WORDS, pairs_with_passages
from tests.fakes import CHAIN_WRONG, QUESTION, RuleChatModel, ScriptedReader, is_tracing, retriever

# The reader finds Toronto, but under θ: IR's check lets the LLM's "Montreal" pass.
UNSURE = {
    "performer": ReaderOutput("Kevin Drew", 0.5),
    "born": ReaderOutput("Toronto", 0.5),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 0.5),
}


def passage_following_llm() -> RuleChatModel:
    """Writes the wrong chain; its tracing states where a [Reference] says Kevin Drew was born, if one is shown."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        if not is_tracing(messages):
            return CHAIN_WRONG
        tail = messages[-1].text.rsplit('[Question]: "', 1)[1]
        born = re.search(r"\[Reference (\d)\]: Kevin Drew: .*?in (\w+)\)", tail)
        if born is None:
            return "[Final Content]: Kevin Drew was born in Montreal [2]. So the final answer is Montreal."
        return f"[Final Content]: Kevin Drew was born in {born[2]} [{born[1]}]. So the final answer is {born[2]}."

    return RuleChatModel(respond=respond)


def tracing_prompt(llm: RuleChatModel) -> str:
    return next(call[-1].text for call in llm.calls if is_tracing(call))


def test_the_passage_held_back_by_the_gate_reaches_the_final_answer() -> None:
    llm = passage_following_llm()
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(UNSURE), confidence_threshold=1.5)
    out = graph.invoke({"question": QUESTION}, context=Context(tracing="passages"))
    assert out["rounds"] == 1  # nothing corrected: f <= θ everywhere
    assert out["answer"] == "Toronto"
    prompt = tracing_prompt(llm)
    assert "[Reference 2]: Kevin Drew: Kevin Drew (born 9 September 1976 in Toronto) is a Canadian musician." in prompt
    assert prompt.index("[Query 2]") < prompt.index("[Reference 2]") < prompt.index("[Answer 2]")


@pytest.mark.parametrize("context", [Context(preset="paper"), Context(tracing="pairs")])
def test_off_the_tracing_sees_the_pairs_only(context: Context) -> None:
    llm = passage_following_llm()
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(UNSURE), confidence_threshold=1.5)
    out = graph.invoke({"question": QUESTION}, context=context)
    assert out["answer"] == "Montreal"
    assert "[Reference" not in tracing_prompt(llm)


def test_steps_show_their_passage_cut_and_one_without_a_passage_shows_the_pair() -> None:
    long = " ".join(f"w{i}" for i in range(PASSAGE_WORDS + 30))
    path: Any = [
        {"index": 1, "query": "Q1?", "answer": "A1.", "document": {"page_content": long, "metadata": {"title": "T"}}},
        {"index": 2, "query": "Q2?", "answer": "A2.", "document": None},
        {"index": 3, "query": "Q3?", "answer": "A3.", "document": {"page_content": "a\n b", "metadata": {}}},
    ]
    text = pairs_with_passages(path)
    lines = text.splitlines()
    assert lines[0] == "[Query 1]: Q1?"
    assert lines[1] == "[Reference 1]: T: " + " ".join(f"w{i}" for i in range(PASSAGE_WORDS)) + " ..."
    assert lines[2:5] == ["[Answer 1]: A1.", "[Query 2]: Q2?", "[Answer 2]: A2."]
    assert lines[5:] == ["[Query 3]: Q3?", "[Reference 3]: a b", "[Answer 3]: A3."]


def test_the_field_is_checked_set_by_the_presets_and_on_the_command_line() -> None:
    with pytest.raises(ValueError, match="tracing must be one of pairs, passages, confirmed"):
        Context(tracing="yes")  # type: ignore[arg-type]
    assert Context(preset="paper").resolved(threshold=1.0, reader_yes_no=False).tracing == "pairs"
    assert Context().resolved(threshold=1.0, reader_yes_no=False).tracing == "reader_confirmed"
    assert Context(tracing="confirmed").resolved(threshold=1.0, reader_yes_no=False).tracing == "confirmed"
    import argparse

    from searchain_graph.cli.settings import add_context_options

    parser = argparse.ArgumentParser()
    add_context_options(parser)
    assert context_of(parser.parse_args(["--tracing", "passages"])).tracing == "passages"
    with pytest.raises(SystemExit):
        parser.parse_args(["--tracing", "all"])


def test_confirmed_shows_only_the_answers_ir_stands_behind() -> None:
    doc = {"page_content": "Kevin Drew (born 1976 in Toronto) is a musician.", "metadata": {"title": "Kevin Drew"}}
    path: Any = [
        {
            "index": 1,
            "query": "Q1?",
            "answer": "Kevin Drew.",
            "source": "llm",
            "reader_answer": "Kevin Drew",
            "document": doc,
        },
        {
            "index": 2,
            "query": "Q2?",
            "answer": "Montreal.",
            "source": "llm",
            "reader_answer": "Toronto",
            "document": doc,
        },
        {"index": 3, "query": "Q3?", "answer": "Toronto.", "source": "corrected", "reader_answer": "", "document": doc},
        {"index": 4, "query": "Q4?", "answer": "Ohio.", "source": "llm", "reader_answer": "", "document": doc},
    ]
    text = pairs_with_passages(path, only_confirmed=True)
    assert "[Answer 1]: Kevin Drew." in text and "[Answer 3]: Toronto." in text
    assert "[Answer 2]" not in text and "[Answer 4]" not in text
    assert text.count("[Reference ") == 4
    assert "[Answer 2]: Montreal." in pairs_with_passages(path)


def test_confirmed_the_unconfirmed_answer_is_read_from_its_passage() -> None:
    llm = passage_following_llm()
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(UNSURE), confidence_threshold=1.5)
    out = graph.invoke({"question": QUESTION}, context=Context(tracing="confirmed"))
    assert out["answer"] == "Toronto"
    prompt = tracing_prompt(llm)
    tail = prompt.rsplit('[Question]: "', 1)[1]
    assert "[Reference 2]: Kevin Drew:" in tail
    assert "[Answer 2]" not in tail and "Montreal." not in tail  # the LLM's unconfirmed answer is not shown
    assert "[Answer 1]: Kevin Drew." in tail  # the reader's g is in it: confirmed


def test_reader_answers_from_the_path_passages_and_the_content_cites_the_path() -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        text = messages[-1].text
        if text.startswith("Answer the question using the paragraphs."):
            asked = text.rsplit("\nQ: ", 1)[1]
            assert asked.startswith(QUESTION)
            shown = text.rsplit("A: Toronto Coach Terminal\n", 1)[1]
            return "Toronto\nsome more" if "born 9 September 1976 in Toronto" in shown else "Montreal"
        return CHAIN_WRONG

    llm = RuleChatModel(respond=respond)
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(UNSURE), confidence_threshold=1.5)
    out = graph.invoke({"question": QUESTION}, context=Context(tracing="reader"))
    assert out["answer"] == "Toronto"
    assert out["final_content"].endswith("So the final answer is Toronto.")
    assert "[1]" in out["final_content"] and "[3]" in out["final_content"]
    prompt = llm.calls[-1][-1].text
    assert prompt.count("Wikipedia Title: Kevin Drew\n") == 2  # the worked example's and the path's


@pytest.mark.parametrize("task", ["longform", "yesno", "fact"])
def test_reader_leaves_other_tasks_to_the_pairs(task: str) -> None:
    llm = passage_following_llm()
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(UNSURE), confidence_threshold=1.5, task=task)
    graph.invoke({"question": QUESTION}, context=Context(tracing="reader"))
    assert not any(call[-1].text.startswith("Answer the question using the paragraphs.") for call in llm.calls)
    assert any(is_tracing(call) for call in llm.calls)


def test_reader_confirmed_lists_the_answers_ir_stands_behind() -> None:
    from searchain_graph.method.adaptations.tracing_passages import reader_prompt

    doc = {"page_content": "Kevin Drew (born 1976 in Toronto) is a musician.", "metadata": {"title": "Kevin Drew"}}
    path: Any = [
        {
            "index": 1,
            "query": "Who?",
            "answer": "Kevin Drew.",
            "source": "llm",
            "reader_answer": "Kevin Drew",
            "document": doc,
        },
        {
            "index": 2,
            "query": "Where born?",
            "answer": "Montreal.",
            "source": "llm",
            "reader_answer": "Toronto",
            "document": doc,
        },
    ]
    prompt = reader_prompt("Q?", path, with_confirmed=True)
    tail = prompt.rsplit("A: Toronto Coach Terminal\n", 1)[1]
    assert tail.count("Wikipedia Title: Kevin Drew\n") == 1  # one passage, shown once
    assert "Checked answers:\nWho? Kevin Drew.\n\nQ: Q?\nA:" in tail
    assert "Montreal" not in tail
    unchecked: Any = [dict(path[1])]
    assert "Checked answers" not in reader_prompt("Q?", unchecked, with_confirmed=True)
    assert "Checked answers" not in reader_prompt("Q?", path)


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("", "gave no answer"),
        ("   \n\n", "gave no answer"),
        ("[Query 1]: Where was Kevin Drew born?\n[Answer 1]: Toronto.", "wrote a chain"),
        ("If you don't know the answer:", "wrote a chain or the prompt's words"),
    ],
)
def test_a_reader_reply_without_an_answer_leaves_the_paths_answer(reply: str, why: str) -> None:
    llm = RuleChatModel(respond=lambda m: reply if m[-1].text.startswith("Answer the question") else CHAIN_WRONG)
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(UNSURE), confidence_threshold=1.5)
    out = graph.invoke({"question": QUESTION})  # the default: reader_confirmed, tracing checks on
    assert out["answer"] == "Gare d'autocars de Montreal"  # the path's last answer: nothing was corrected
    assert out["final_content"].endswith("So the final answer is Gare d'autocars de Montreal.")
    assert any(why in w and "the path's last answer" in w for w in out["warnings"])


def test_a_reader_reply_is_trimmed_and_kept_as_written_without_the_checks() -> None:
    from searchain_graph.method.adaptations.tracing_passages import reader_reply

    path: Any = [{"index": 1, "query": "Which bus station serves Columbus?", "answer": "Columbus Bus Station."}]
    content, why = reader_reply(
        path, 'A: "Columbus Bus Station."\nbecause ...', "Where do buses in Ohio leave?", checks=True
    )
    assert why is None and content.endswith("So the final answer is Columbus Bus Station.")
    # The worked example's answer, for a question about Ohio, is the example copied: the path's answer ends it.
    content, why = reader_reply(path, "Toronto Coach Terminal", "Where do buses in Ohio leave?", checks=True)
    assert content.endswith("So the final answer is Columbus Bus Station.")
    assert why is not None and "repeats the worked example (Toronto, Toronto Coach Terminal)" in why
    # The paper's rule keeps what the LLM wrote.
    content, why = reader_reply(path, "Toronto Coach Terminal", "Where do buses in Ohio leave?", checks=False)
    assert why is None and content.endswith("So the final answer is Toronto Coach Terminal.")
