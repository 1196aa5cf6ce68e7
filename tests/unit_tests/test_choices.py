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
from searchain_graph.method.adaptations.options import answer_as_option, question_options
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
