from __future__ import annotations

import pytest

from searchain_graph.method.parsing import (
    answer_contains,
    citations,
    drop_invalid_citations,
    extract_final_answer,
    normalize_answer,
    parse_chain,
)


def _summary(text: str) -> list[tuple[int, str, str | None, bool]]:
    return [(n["index"], n["query"], n["answer"], n["unsolved"]) for n in parse_chain(text).nodes]


def test_paper_format() -> None:
    text = """[Query 1]: Who is the performer of Spirit If... ?
[Answer 1]: The performer of Spirit If… is Kevin Drew.
[Query 2]: Where was Kevin Drew born?
[Unsolved Query]: Where was Kevin Drew born?"""
    parsed = parse_chain(text)
    assert _summary(text) == [
        (1, "Who is the performer of Spirit If... ?", "The performer of Spirit If… is Kevin Drew.", False),
        (2, "Where was Kevin Drew born?", None, True),
    ]
    assert parsed.final_content is None
    assert parsed.warnings == []


def test_missing_numbers_extra_whitespace_bullets_and_bold() -> None:
    text = """Sure! Here is the reasoning chain:

- **[Query]:**   Who wrote   Hamlet?
- **[Answer]:** William Shakespeare.
  * [ Query 7 ] : When was   he born?
  * [answer 7]: 1564
**[Final Content]**: Shakespeare wrote Hamlet [1] and was born in 1564 [2]. So the final answer is 1564.

Let me know if you need anything else."""
    parsed = parse_chain(text)
    assert _summary(text) == [
        (1, "Who wrote Hamlet?", "William Shakespeare.", False),
        (2, "When was he born?", "1564", False),
    ]
    assert parsed.final_content is not None
    assert parsed.final_content.startswith("Shakespeare wrote Hamlet [1]")


def test_several_tags_on_one_line_and_text_after_the_chain() -> None:
    text = (
        "[Query 1]: When was Arthur's Magazine started?[Answer 1]: 1844.[Query 2]: When was First for Women "
        "started?[Answer 2]: 1989[Final Content]: Arthur's Magazine started in 1844 [1]. So the answer is "
        'Arthur\'s Magazine.\n[Question]: "Another example?"\n[Query 1]: ignored'
    )
    parsed = parse_chain(text)
    assert [(n["query"], n["answer"]) for n in parsed.nodes] == [
        ("When was Arthur's Magazine started?", "1844."),
        ("When was First for Women started?", "1989"),
    ]
    assert parsed.final_content == "Arthur's Magazine started in 1844 [1]. So the answer is Arthur's Magazine."


def test_echoed_prompt_scaffolding_is_ignored() -> None:
    text = """[Question]: "Where do greyhound buses leave from?"
[Query 1]: Who is the performer of Spirit If... ?
If you don't know the answer:
[Unsolved Query]: Who is the performer of Spirit If... ?
If you know the answer:
[Answer 1]: Kevin Drew.
[Query 2]: Where was Kevin Drew born?
Instruction: Please Stop your generation."""
    assert _summary(text) == [
        (1, "Who is the performer of Spirit If... ?", "Kevin Drew.", False),
        (2, "Where was Kevin Drew born?", None, True),
    ]


def test_unclosed_chain_and_rewritten_unsolved_query() -> None:
    text = "[Query 1]: Who founded the band?\n[Unsolved Query]: founder of Broken Social Scene\n[Query 2]: When"
    assert _summary(text) == [(1, "founder of Broken Social Scene", None, True), (2, "When", None, True)]
    assert any("treated as unsolved" in w for w in parse_chain(text).warnings)


def test_standalone_unsolved_query_and_orphan_answer() -> None:
    text = "[Answer 1]: orphan\n[Unsolved Query]: Where is Toronto?\n[Answer 3]: Canada\n[Answer 4]: extra"
    parsed = parse_chain(text)
    assert [(n["query"], n["answer"], n["unsolved"]) for n in parsed.nodes] == [("Where is Toronto?", "Canada", False)]
    assert sum("no open query" in w for w in parsed.warnings) == 2


@pytest.mark.parametrize("text", ["", "   ", "Toronto.", "[Query 1]:", "[Final Content]:"])
def test_degenerate_outputs(text: str) -> None:
    parsed = parse_chain(text)
    assert parsed.nodes == []


def test_runaway_chain_is_capped() -> None:
    text = "\n".join(f"[Query {i}]: q{i}?\n[Answer {i}]: a{i}" for i in range(100))
    parsed = parse_chain(text)
    assert len(parsed.nodes) == 32
    assert any("kept the first 32" in w for w in parsed.warnings)


def test_normalisation_is_squad_plus_unicode_punctuation() -> None:
    assert normalize_answer("The  Performer of Spirit If…!") == "performer of spirit if"
    assert normalize_answer("Spirit If...") == "spirit if"
    assert answer_contains("Kevin Drew was born in Toronto.", "toronto")
    assert not answer_contains("Torontonian", "Toronto")  # token-aligned
    assert answer_contains("anything", "")


@pytest.mark.parametrize(
    ("content", "task", "expected"),
    [
        ("Kevin Drew [1]. So the final answer is Toronto Coach Terminal.", "multihop", "Toronto Coach Terminal"),
        (
            "So Arthur's Magazine was started first. So the answer is Arthur's Magazine.",
            "multihop",
            "Arthur's Magazine",
        ),
        ("Final answer: 1844", "multihop", "1844"),
        ("December occurs in winter [3]. So the final answer is Yes.", "yesno", "Yes"),
        ("It does not sink. no.", "yesno", "No"),
        ("Telemundo is Spanish-language [2]. So the final answer is REFUTES.", "fact", "REFUTES"),
        ("Nothing stated here.", "multihop", None),
        (None, "multihop", None),
        # The stop of an initial or of a title does not end the answer (2Wiki's "Mr. Fix-It" was cut to
        # "Mr"; CoT's "John D. Rockefeller" to "John D"); a sentence's stop does.
        ("So the final answer is Mr. Fix-It.", "multihop", "Mr. Fix-It"),
        ("So the answer is John D. Rockefeller. He founded it.", "multihop", "John D. Rockefeller"),
        ("The answer is St. Louis, Missouri.", "multihop", "St. Louis, Missouri"),
        ("So the final answer is Dr. No.", "multihop", "Dr. No"),
        ("So the final answer is no. It sinks.", "yesno", "No"),
        ("So the final answer is Toronto. Then it ends.", "multihop", "Toronto"),
    ],
)
def test_extract_final_answer(content: str | None, task: str, expected: str | None) -> None:
    assert extract_final_answer(content, task) == expected


def test_citations() -> None:
    assert citations("A [1]. B [2][3]. C [12].") == [1, 2, 3, 12]
    cleaned, bad = drop_invalid_citations("A [1]. B [4]. C [0] and [2].", 2)
    assert cleaned == "A [1]. B. C and [2]."
    assert bad == [4, 0]


def test_an_extracted_answer_is_never_whitespace() -> None:
    # Found by benchmarks/fuzz.py at 10,000 cases: "answer is" followed by a carriage return.
    assert extract_final_answer("FINAL ANSWERIS\r") is None
    assert extract_final_answer("the answer is \t Toronto \r\n") == "Toronto"
    assert extract_final_answer("FINAL ANSWERIS0\r0") == "0\r0"  # a piece of the text, not rewritten
