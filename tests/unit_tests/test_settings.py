"""One decision, one setting: the typed settings, and the oracle benchmark judging as the graph does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from langchain_core.messages import BaseMessage

from searchain_graph import Context, ReaderOutput, create_searchain_graph
from searchain_graph.evaluation.oracle import oracle_verdict
from searchain_graph.ir.readers.base import ReaderTraits, reader_traits
from searchain_graph.method.graph import reader_settings
from tests.fakes import RuleChatModel, ScriptedReader, retriever, tracing_reply

READS = {"born": ReaderOutput("Toronto", 3.0), "greyhound": ReaderOutput("Toronto Coach Terminal", 2.5)}


class SaysNothing(ScriptedReader):
    """Declares nothing beyond ``reads_passages``: every other trait takes its default."""


class AnswersYesNo(ScriptedReader):
    answers_yes_no: ClassVar[bool] = True


class SpansOnly(ScriptedReader):
    answers_yes_no: ClassVar[bool] = False


class OwnThreshold(ScriptedReader):
    answers_yes_no: ClassVar[bool] = False
    default_threshold: ClassVar[float] = 2.8
    threshold_source: ClassVar[str] = "its model card"


class HighThreshold(ScriptedReader):
    default_threshold: ClassVar[float] = 9.0


READERS = [SaysNothing, AnswersYesNo, SpansOnly, OwnThreshold, HighThreshold]

# (query, the LLM's answer or None for an unsolved query): a yes/no answer, a right one, a wrong
# one (f = 2.5 or 3: above some readers' θ, below others'), and an unsolved query.
NODES = [
    ("Was Kevin Drew born in Toronto?", "Yes."),
    ("Where was Kevin Drew born?", "Toronto."),
    ("Where was Kevin Drew born?", "Montreal."),
    ("Where do greyhound buses in Toronto leave from?", "Union Station."),
    ("Where do greyhound buses in Toronto leave from?", None),
]


def one_node_llm(query: str, answer: str | None) -> RuleChatModel:
    line = f"[Query 1]: {query}\n[Answer 1]: {answer}" if answer is not None else f"[Unsolved Query]: {query}"

    def respond(messages: Sequence[BaseMessage]) -> str:
        return tracing_reply(messages) or f"{line}\n[Final Content]: The answer is {answer or 'unknown'}."

    return RuleChatModel(respond=respond)


@pytest.mark.parametrize("reader_class", READERS, ids=lambda c: c.__name__)
@pytest.mark.parametrize(("query", "answer"), NODES)
def test_the_oracle_benchmark_and_the_graph_reach_one_verdict(
    reader_class: type[ScriptedReader], query: str, answer: str | None
) -> None:
    reader = reader_class(READS)
    graph = create_searchain_graph(one_node_llm(query, answer), retriever(), reader, max_rounds=1)
    out = graph.invoke({"question": "Where do greyhound buses in Kevin Drew's birthplace leave from?"})
    (check,) = out["tree"][0]["checks"]
    node: dict[str, Any] = {"query": query, "answer": answer, "document": None, "g": "", "f": None}
    ref = next(iter(out["references"]), None)
    if ref is not None:
        node.update(document=ref["document"], g=ref["reader_answer"], f=ref["confidence"])
    else:  # an unsolved query whose completion is off: the passage is in the cache only
        node.update(document={"page_content": "x", "metadata": {}}, g=check["reader_answer"], f=check["confidence"])
    settings, _ = reader_settings(reader)
    assert oracle_verdict(node, settings) == check["action"]


def test_the_reader_declarations_set_the_defaults_once() -> None:
    assert reader_traits(SaysNothing({})) == ReaderTraits(reads_passages=True)
    settings, source = reader_settings(OwnThreshold({}))
    assert (settings.confidence_threshold, settings.verify_yes_no, source) == (2.8, False, "its model card")
    settings, source = reader_settings(AnswersYesNo({}), confidence_threshold=0.5, verify_yes_no=False)
    assert (settings.confidence_threshold, settings.verify_yes_no, source) == (0.5, False, "argument")


def test_a_wrongly_typed_declaration_is_named() -> None:
    class Broken(ScriptedReader):
        default_threshold: ClassVar[Any] = "2.0"

    with pytest.raises(TypeError, match=r"Broken\.default_threshold must be int or float"):
        reader_traits(Broken({}))


def test_settings_are_typed_and_checked() -> None:
    settings = Context(task="hotpotqa", confidence_threshold=2)
    assert settings.task == "multihop" and isinstance(settings.confidence_threshold, float)
    for bad, message in (
        ({"max_rounds": 0}, "max_rounds must be an integer >= 1"),
        ({"max_rounds": True}, "max_rounds must be an integer >= 1"),
        ({"confidence_threshold": float("nan")}, "confidence_threshold must be a finite number"),
        ({"rouge_threshold": 2.0}, r"rouge_threshold must lie in \[0, 1\]"),
        ({"verification": "yes"}, "verification must be True or False"),
        ({"task": "poetry"}, "unknown task 'poetry'"),
        ({"preset": "best"}, "preset must be one of tuned, paper, got 'best'"),
        ({"duplicates": "words"}, "duplicates must be one of text, meaning"),
        ({"chain_repair": "on"}, "chain_repair must be True, False or None"),
    ):
        with pytest.raises(ValueError, match=message):
            Context(**bad)
    with pytest.raises(AttributeError):
        settings.max_rounds = 3  # type: ignore[misc]


def test_a_context_overrides_the_factory_field_by_field() -> None:
    graph = Context(max_rounds=4, confidence_threshold=1.5, preset="paper", chain_repair=True)
    run = Context(max_rounds=2, task="strategyqa").over(graph)
    assert (run.max_rounds, run.task, run.confidence_threshold) == (2, "yesno", 1.5)
    assert (run.preset, run.chain_repair) == ("paper", True)  # what the run leaves at its default stays the graph's
    with pytest.raises(ValueError, match="max_rounds"):
        Context(max_rounds=-1)


def test_presets_fill_the_adaptations_a_context_leaves_empty() -> None:
    paper = Context(preset="paper").resolved(threshold=2.0, reader_yes_no=False)
    assert (paper.demonstrations, paper.duplicates, paper.verify_yes_no) == ("instruction", "text", True)
    assert not any(
        (paper.answer_checks, paper.chain_repair, paper.tracing_checks, paper.option_answers, paper.date_order)
    )
    tuned = Context().resolved(threshold=2.0, reader_yes_no=False)
    assert (tuned.demonstrations, tuned.duplicates, tuned.verify_yes_no) == ("turns", "meaning", False)
    assert all((tuned.answer_checks, tuned.chain_repair, tuned.tracing_checks, tuned.option_answers, tuned.date_order))
    assert tuned.confidence_threshold == 2.0
    # A field set by hand wins over the preset; an explicit θ over the reader's.
    mixed = Context(preset="paper", demonstrations="turns", confidence_threshold=3).resolved(
        threshold=2.0, reader_yes_no=False
    )
    assert (mixed.demonstrations, mixed.duplicates, mixed.confidence_threshold) == ("turns", "text", 3.0)


def test_a_field_a_run_sets_wins_whatever_its_value() -> None:
    graph = Context(max_rounds=1)
    assert Context(max_rounds=5).over(graph).max_rounds == 5  # 5 is the default, and it was asked for
    assert Context(max_rounds=4).over(graph).max_rounds == 4
    assert Context().over(graph).max_rounds == 1  # a field the run leaves alone stays the graph's
    assert Context(max_rounds=5).given == {"max_rounds"}


def test_run_contexts_and_configurable_fields_reach_the_run() -> None:
    from tests.fakes import QUESTION, TREE_READS, ScriptedReader, retriever, tree_llm

    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), max_rounds=1)
    assert graph.invoke({"question": QUESTION})["rounds"] == 1
    assert graph.invoke({"question": QUESTION}, context={"max_rounds": 5})["rounds"] == 3
    assert graph.invoke({"question": QUESTION}, context=Context(max_rounds=5))["rounds"] == 3
    # As LangGraph servers pass them: Context fields in config["configurable"]; context= wins over them.
    assert graph.invoke({"question": QUESTION}, config={"configurable": {"max_rounds": 5}})["rounds"] == 3
    both = graph.invoke({"question": QUESTION}, config={"configurable": {"max_rounds": 5}}, context={"max_rounds": 2})
    assert both["rounds"] == 2
    with pytest.raises(ValueError, match="max_rounds must be an integer"):
        graph.invoke({"question": QUESTION}, config={"configurable": {"max_rounds": 0}})
