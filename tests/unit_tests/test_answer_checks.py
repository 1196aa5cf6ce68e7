"""The reader's g checked before it overrules the LLM: a date for a place, a name spelled another way."""

from __future__ import annotations

import time

import pytest

from searchain_graph import ReaderOutput, create_searchain_graph
from searchain_graph.method.adaptations.answer_checks import mistyped, reads_as_date, spelled_alike, stated_in_question
from searchain_graph.method.context import Context
from searchain_graph.method.verdict import ir_verdict
from tests.fakes import RuleChatModel, ScriptedReader, retriever, tracing_reply


@pytest.mark.parametrize(
    "text",
    ["1966", "October 30, 1964", "30 October 1964", "1960s", "1642 – 6 November 1715", "c. 1600", "12,000", "19th"],
)
def test_dates_and_numbers(text: str) -> None:
    assert reads_as_date(text)


@pytest.mark.parametrize(
    "text", ["", "May", "Apollo 11", "Weston-super-Mare", "1984 Summer Olympics", "Route 66", "throat cancer"]
)
def test_not_dates(text: str) -> None:
    assert not reads_as_date(text)


def test_a_date_cannot_answer_a_place_or_a_person() -> None:
    # The oracle chains' broken nodes: the reader took the date beside the place.
    assert mistyped("What is the place of birth of Denys Desjardins?", "1966")
    assert mistyped("Where was Mark Steven Johnson born?", "October 30, 1964")
    assert mistyped("Who directed Levity?", "2003")
    # Right kinds, or kinds this check does not read.
    assert mistyped("What is the place of birth of Denys Desjardins?", "Montreal, Quebec") is None
    assert mistyped("When was Henry III crowned?", "1216") is None
    assert mistyped("How many people live in Bergen?", "285,900") is None
    assert mistyped("What did North Korea have?", "1950") is None


def test_spelled_alike() -> None:
    assert spelled_alike("Puttanna Kanagal", "Puttana Kanagal")
    assert spelled_alike("It was directed by Puttanna Kanagal.", "Puttana Kanagal")
    assert spelled_alike("Wolfgang Amadeus Mozart", "Wolfgang Amadeus Mozzart")
    # Four letters dropped from 46 (ratio 0.955): the length pre-filter must not skip it.
    assert spelled_alike("Johan Sebastan Bach of Eisenah in Thuringa", "Johann Sebastian Bach of Eisenach in Thuringia")
    # Another person, another number, a short name: not alike.
    assert not spelled_alike("Joan Smith", "John Smith")
    assert not spelled_alike("Born in 1599.", "1600")
    assert not spelled_alike("Jacques Rivette", "Jacques Demy")
    assert not spelled_alike("Bolko III of Strzelce", "Duke Jan I of Oświęcim")
    assert not spelled_alike("", "Puttana Kanagal") and not spelled_alike("Puttanna Kanagal", "")


def test_huge_inputs_stay_fast() -> None:
    answer = "Puttanna Kanagal " * 60_000 + "x"  # a megabyte
    start = time.perf_counter()
    assert spelled_alike(answer, "Puttana Kanagal")
    assert not spelled_alike("word " * 200_000, "Puttana Kanagal")
    assert not spelled_alike("Puttanna Kanagax " * 60_000, "Puttana Kanagal" * 100)
    assert not reads_as_date("1" * 1_000_000)  # over the bound: not read
    assert time.perf_counter() - start < 60  # a generous bound; the figure is seconds at most


def _verdict(query: str, answer: str, g: str, f: float = 6.0) -> dict[str, object]:
    node = {"index": 1, "query": query, "answer": answer, "unsolved": False}
    result = {"document": {"page_content": "a passage", "metadata": {}}, "answer": g, "confidence": f}
    return ir_verdict(node, result, Context(confidence_threshold=4.26, answer_checks=True))  # type: ignore[arg-type]


def test_the_verdict_passes_a_g_that_cannot_be_the_answer() -> None:
    held = _verdict("What is the place of birth of Denys Desjardins?", "Montreal, Quebec", "1966")
    assert held["action"] == "pass" and "place" in str(held["reason"])
    alike = _verdict("What is the director of Phalitamsha?", "Puttanna Kanagal", "Puttana Kanagal")
    assert alike["action"] == "pass" and "spelled" in str(alike["reason"])
    # A g of the right kind still corrects, and a date still corrects a date.
    assert _verdict("Where was Denys Desjardins born?", "Paris", "Montreal")["action"] == "correction"
    assert _verdict("When was Henry III crowned?", "1220", "1216")["action"] == "correction"
    # Completion is unchanged: an unsolved place query gets even a date back.
    node = {"index": 1, "query": "Where was X born?", "answer": None, "unsolved": True}
    result = {"document": {"page_content": "p", "metadata": {}}, "answer": "1966", "confidence": 9.0}
    assert ir_verdict(node, result, Context())["action"] == "completion"  # type: ignore[arg-type]


LARA = "Alice David is the voice of Lara Croft in a video game developed by which company ?"
NEVADA = "Randall Cunningham II was a multi-sport athlete at the high school located in what Nevada city?"


def test_stated_in_question() -> None:
    assert stated_in_question(LARA, "Alice David is the voice of Lara Croft.", "Keeley Hawes")
    assert stated_in_question(LARA, "Alice David", "Keeley Hawes")
    # g that contains the stated answer says more: it still corrects.
    assert not stated_in_question(NEVADA, "Nevada", "Summerlin, Nevada")
    # An answer the question does not state, or none at all.
    assert not stated_in_question(LARA, "Core Design", "Crystal Dynamics")
    assert not stated_in_question(LARA, " . ", "Keeley Hawes")
    assert not stated_in_question("", "Alice David", "Keeley Hawes")


def test_the_verdict_keeps_a_stated_answer_only_when_asked() -> None:
    node = {"index": 1, "query": "Who is the voice of Lara Croft?", "answer": "Alice David.", "unsolved": False}
    result = {"document": {"page_content": "a passage", "metadata": {}}, "answer": "Keeley Hawes", "confidence": 6.2}
    on = Context(confidence_threshold=4.26, stated_answers=True)
    held = ir_verdict(node, result, on, LARA)  # type: ignore[arg-type]
    assert held["action"] == "pass" and "question itself states" in str(held["reason"])
    # Off (the paper's preset), or without the question: the paper's rule corrects it.
    off = Context(confidence_threshold=4.26, stated_answers=False)
    assert ir_verdict(node, result, off, LARA)["action"] == "correction"  # type: ignore[arg-type]
    assert ir_verdict(node, result, on)["action"] == "correction"  # type: ignore[arg-type]
    assert Context(preset="tuned").resolved(threshold=4.26, reader_yes_no=False).stated_answers is False
    assert Context(preset="paper").resolved(threshold=4.26, reader_yes_no=False).stated_answers is False
    with pytest.raises(ValueError, match="stated_answers"):
        Context(stated_answers="yes")  # type: ignore[arg-type]


def test_the_graph_gives_the_check_its_question() -> None:
    question = "Kevin Drew, the performer of Spirit If..., was born in which city?"
    chain = "[Query 1]: Who performed Spirit If...?\n[Answer 1]: Kevin Drew.\n[Final Content]: Kevin Drew."
    llm = RuleChatModel(respond=lambda messages: tracing_reply(messages) or chain)
    reads = {"Spirit If": ReaderOutput("Broken Social Scene", 6.2)}
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(reads), max_rounds=1)
    kept = graph.invoke({"question": question}, context=Context(confidence_threshold=4.26, stated_answers=True))
    check = kept["tree"][0]["checks"][0]
    assert check["action"] == "pass" and "question itself states" in check["reason"]
    corrected = graph.invoke({"question": question}, context=Context(confidence_threshold=4.26, stated_answers=False))
    assert corrected["tree"][0]["checks"][0]["action"] == "correction"
