"""A question that names its two possible answers gets one of them (seen in 2Wiki trees).

The 1.5B ended chains for "Which film ..., A or B?" on the person it compared ("So the final answer
is Ringo Lam."); the chain's pairs say which option that person belongs to.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from searchain_graph import ReaderOutput, create_searchain_graph
from searchain_graph.baselines import create_searchain_no_ir_graph
from searchain_graph.method.adaptations.date_order import date_order_of, dated_pairs, dates_in, ordered_answer
from searchain_graph.method.adaptations.options import answer_as_option, question_options
from searchain_graph.method.state import Reference
from tests.fakes import RuleChatModel, ScriptedReader, is_tracing, retriever

FILMS = "Which film has the director who died later, What Will You Do When You Catch Me? or School On Fire?"
PAIRS = [
    ("Who directed What Will You Do When You Catch Me?", "Christopher Nolan."),
    ("Who directed School On Fire?", "Ringo Lam."),
    ("When did Ringo Lam die?", "December 29, 2018"),
]


@pytest.mark.parametrize(
    ("question", "options"),
    [
        (FILMS, ("What Will You Do When You Catch Me?", "School On Fire")),
        (
            "Which film has the director born earlier, The Adventures Of Priscilla, Queen Of The Desert or "
            "Harvest: 3,000 Years?",
            ("The Adventures Of Priscilla, Queen Of The Desert", "Harvest: 3,000 Years"),
        ),
        ("Who was born first, Arthur Conan Doyle or Penelope Lively?", ("Arthur Conan Doyle", "Penelope Lively")),
        ("Which film whose director is younger,  Forbidden Ground or Free Guy ?", ("Forbidden Ground", "Free Guy")),
        ("Which magazine was started first Arthur's Magazine or First for Women?", None),  # no comma: not read
        ("Where did James Stanley (Bishop)'s father die?", None),
        ("Is it Toronto, or not?", None),
        ("Which, " + "a or " * 50_000 + "b?", ("a", "a or " * 49_999 + "b")),
        ("," * 1_000_000 + " or ?", None),
        ("Which, or b?", None),
        ("Which, " + "x" * 1_000_000 + " or y?", ("x" * 1_000_000, "y")),
        ("", None),
    ],
)
def test_the_options_a_question_offers(question: str, options: tuple[str, str] | None) -> None:
    assert question_options(question) == options


@pytest.mark.parametrize(
    ("answer", "kept"),
    [
        ("Ringo Lam", "School On Fire"),  # the chain gives Ringo Lam for School On Fire
        ("Christopher Nolan", "What Will You Do When You Catch Me?"),
        ("School On Fire", "School On Fire"),  # an option: kept
        ("It is School On Fire.", "It is School On Fire."),
        ("School", "School"),  # named by an option: kept
        ("Steven Spielberg", "Steven Spielberg"),  # linked to neither: left alone
        ("", ""),
    ],
)
def test_an_answer_naming_neither_option_takes_the_one_the_chain_links_it_to(answer: str, kept: str) -> None:
    got, warning = answer_as_option(FILMS, answer, PAIRS)
    assert got == kept
    assert (warning is not None) is (got != answer)
    if warning:
        assert f"the answer {answer!r} named neither of the question's options" in warning


def test_an_answer_linked_to_both_options_is_left_alone() -> None:
    pairs = [
        ("Who directed School On Fire?", "Ringo Lam"),
        ("Who directed What Will You Do When You Catch Me?", "Ringo Lam"),
    ]
    assert answer_as_option(FILMS, "Ringo Lam", pairs) == ("Ringo Lam", None)
    assert answer_as_option("Who is older?", "Ringo Lam", pairs) == ("Ringo Lam", None)  # no options


ALBUMS = "Which album has the performer who was born later, Spirit If... or Kiss and Tell?"
CHAIN = (
    "[Query 1]: Who is the performer of Spirit If...?\n[Answer 1]: Kevin Drew.\n"
    "[Query 2]: Who is the performer of Kiss and Tell?\n[Answer 2]: Shirley Temple.\n"
    "[Final Content]: Kevin Drew was born later than Shirley Temple. So the final answer is Kevin Drew."
)
TRACED = (
    "[Final Content]: Kevin Drew performed Spirit If... [1]. Shirley Temple performed Kiss and Tell [2]. "
    "So the final answer is Kevin Drew."
)


def _llm() -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if messages[-1].text.startswith("Answer the question"):  # the tracing reader (the default)
            return "Kevin Drew"
        return TRACED if is_tracing(messages) else CHAIN

    return RuleChatModel(respond=respond)


@pytest.mark.parametrize("method", ["searchain", "searchain_no_ir"])
def test_searchain_and_its_chain_without_ir_answer_with_an_option(method: str) -> None:
    unsure = ScriptedReader({"performer": ReaderOutput("someone", 0.0)})  # f under θ: the LLM's answers stand
    graph: Any = (
        create_searchain_graph(_llm(), retriever(), unsure, max_rounds=1)
        if method == "searchain"
        else create_searchain_no_ir_graph(_llm())
    )
    out = graph.invoke({"question": ALBUMS})
    assert out["answer"] == "Spirit If..."
    assert any("the answer 'Kevin Drew' named neither of the question's options" in w for w in out["warnings"])


@pytest.mark.parametrize(
    ("question", "order"),
    [
        (
            "Who is older, David Dzakhov or David Luna Sánchez?",
            (("David Dzakhov", "David Luna Sánchez"), "birth", True),
        ),
        ("Who was born first, Erika Jayne or Marco Da Silva", (("Erika Jayne", "Marco Da Silva"), "birth", True)),
        ("Was Diego Lugano or John R. Gunn born first?", (("Diego Lugano", "John R. Gunn"), "birth", True)),
        (FILMS, (("What Will You Do When You Catch Me?", "School On Fire"), "death", False)),
        (
            "Which film was released more recently, True Bromance or Man Alive?",
            (("True Bromance", "Man Alive"), "any", False),
        ),
        ("Which film is older, Ran or Heat?", (("Ran", "Heat"), "any", True)),  # a film's age: its release
        ("Which film came out first, Ran or Heat?", (("Ran", "Heat"), "any", True)),
        ("Which film came out first and lasted later, Ran or Heat?", None),  # both directions: not decided
        ("Which film is longer, Ran or Heat?", None),  # no word of time
        ("Are Ran and Heat from the same country?", None),
    ],
)
def test_the_order_in_time_a_question_asks(question: str, order: tuple[tuple[str, str], str, bool] | None) -> None:
    got = date_order_of(question)
    assert (got and (got.options, got.event, got.earliest)) == order


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("6 October 1988", [(1988, 10, 6)]),
        ("He was born on February 27, 1975.", [(1975, 2, 27)]),
        ("born 3rd of Sept. 1901 in Rome", [(1901, 9, 3)]),
        ("born May, 30th, 1977", [(1977, 5, 30)]),
        ("March 1920 to 1990", [(1920, 3, None), (1990, None, None)]),
        ("1999-12-31", [(1999, 12, 31)]),
        ("1929.", [(1929, None, None)]),
        ("Ringo Lam", []),
    ],
)
def test_the_dates_a_text_states(text: str, dates: list[tuple[int, int | None, int | None]]) -> None:
    assert dates_in(text) == dates


BIRTHS = [
    ("When was David Dzakhov born?", "6 October 1988"),
    ("When was David Luna Sánchez born?", "February 27, 1975"),
]
DIRECTORS = [
    ("Who directed The Base?", "Mark L. Lester"),
    ("Who is the director of Darkened Rooms?", "Louis J. Gasnier"),
    ("When was Mark L. Lester born?", "November 26, 1946"),
    ("What is the date of birth of Louis J. Gasnier?", "He was born on 15 September 1875."),
]


def test_the_dates_on_the_path_decide_which_option_comes_first() -> None:
    older = "Who is older, David Dzakhov or David Luna Sánchez?"
    answer, why = ordered_answer(older, "David Dzakhov is older", BIRTHS)
    assert answer == "David Luna Sánchez"
    assert why is not None and "1988-10-06" in why and "1975-02-27" in why
    assert ordered_answer(older, "David Luna Sánchez", BIRTHS) == ("David Luna Sánchez", None)  # already right
    younger = "Who was born later, David Dzakhov or David Luna Sánchez?"
    assert ordered_answer(younger, "David Luna Sánchez", BIRTHS)[0] == "David Dzakhov"
    # Through the entity a step gave for the option (its director); "(Film)" is not in the query.
    films = "Which film has the director born earlier, The Base (Film) or Darkened Rooms?"
    assert ordered_answer(films, "The Base (Film)", DIRECTORS)[0] == "Darkened Rooms"
    assert ordered_answer(films, "Mark L. Lester", DIRECTORS)[0] == "Darkened Rooms"


@pytest.mark.parametrize(
    "path",
    [
        BIRTHS[:1],  # one option has no date
        [BIRTHS[0], ("When did David Luna Sánchez die?", "1975")],  # a death, not a birth
        [*BIRTHS, ("What is David Luna Sánchez's birth date?", "1970")],  # two dates for one option
        [("When was David Dzakhov born?", "1988"), ("When was David Luna Sánchez born?", "May 1988")],  # one year
    ],
)
def test_an_order_the_path_cannot_decide_leaves_the_answer_alone(path: list[tuple[str, str]]) -> None:
    question = "Who is older, David Dzakhov or David Luna Sánchez?"
    assert ordered_answer(question, "David Dzakhov", path) == ("David Dzakhov", None)
    assert ordered_answer("Who is David Dzakhov?", "a footballer", BIRTHS) == ("a footballer", None)


@pytest.mark.parametrize("on", [True, False])
def test_searchain_answers_an_order_from_the_dates_ir_read(on: bool) -> None:
    question = "Who was born first, Kevin Drew or Shirley Temple?"
    chain = (
        "[Query 1]: When was Kevin Drew born?\n[Answer 1]: September 9, 1976.\n"
        "[Query 2]: When was Shirley Temple born?\n[Answer 2]: April 23, 1988.\n"  # from memory, wrong
        "[Final Content]: So the final answer is Kevin Drew."
    )

    def respond(messages: Sequence[BaseMessage]) -> str:
        return "Kevin Drew" if messages[-1].text.startswith("Answer the question") else chain

    # f under θ: the LLM's answers stand, but the dates compared are those the reader read.
    unsure = ScriptedReader(
        {"Kevin Drew": ReaderOutput("September 9, 1976", 0.0), "Shirley Temple": ReaderOutput("April 23, 1928", 0.0)}
    )
    graph = create_searchain_graph(RuleChatModel(respond=respond), retriever(), unsure, max_rounds=1, date_order=on)
    out = graph.invoke({"question": question})
    assert [r["source"] for r in out["references"]] == ["llm", "llm"]
    assert out["answer"] == ("Shirley Temple" if on else "Kevin Drew")
    assert any("'Shirley Temple' 1928-04-23; the question asks the earlier" in w for w in out["warnings"]) is on
    if on:  # the content says the answer it gives, and cites the path
        assert out["final_content"].endswith("So the final answer is Shirley Temple.")
        assert "[1]" in out["final_content"] and "[2]" in out["final_content"]


def test_only_the_dates_ir_read_are_compared() -> None:
    def step(query: str, answer: str, source: str, g: str) -> Reference:
        return {
            "index": 1,
            "query": query,
            "answer": answer,
            "source": source,  # type: ignore[typeddict-item]
            "document": None,
            "confidence": 0.0,
            "reader_answer": g,
            "round": 1,
        }

    path = [
        step("Who directed The Base?", "Mark L. Lester", "llm", "Steven Lester"),  # a name: kept
        step("When was Erika Jayne born?", "1980.", "llm", "10 July 1971"),  # the date read in the passage
        step("When was Marco Da Silva born?", "May, 30th, 1977", "corrected", "May, 30th, 1977"),  # IR's own
        step("When did Ann Lee die?", "In 1990.", "llm", "1990"),  # the reader's g is in it: confirmed
        step("When did Bo Kim die?", "2001", "llm", "Seoul"),  # an unconfirmed date, no date read: dropped
    ]
    assert dated_pairs(path) == [
        ("Who directed The Base?", "Mark L. Lester"),
        ("When was Erika Jayne born?", "10 July 1971"),
        ("When was Marco Da Silva born?", "May, 30th, 1977"),
        ("When did Ann Lee die?", "In 1990."),
        ("When did Bo Kim die?", ""),
    ]
    question = "Who was born first, Erika Jayne or Marco Da Silva"
    assert ordered_answer(question, "Marco Da Silva", dated_pairs(path))[0] == "Erika Jayne"
    assert ordered_answer("Who died first, Ann Lee or Bo Kim?", "Bo Kim", dated_pairs(path)) == ("Bo Kim", None)


def test_searchain_without_ir_keeps_its_own_conclusion_from_its_own_dates() -> None:
    # Without IR no date was read in a passage: the chain's dates are the LLM's memory, and the
    # order is not recomputed from them.
    chain = (
        "[Query 1]: When was Kevin Drew born?\n[Answer 1]: September 9, 1976.\n"
        "[Query 2]: When was Shirley Temple born?\n[Answer 2]: April 23, 1988.\n"
        "[Final Content]: Shirley Temple was born first. So the final answer is Shirley Temple."
    )
    out = create_searchain_no_ir_graph(RuleChatModel(respond=lambda m: chain)).invoke(
        {"question": "Who was born first, Kevin Drew or Shirley Temple?"}
    )
    assert out["answer"] == "Shirley Temple"
    assert not any("the question asks the" in w for w in out["warnings"])
