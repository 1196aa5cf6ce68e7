"""Paired differences: the bootstrap interval, McNemar's exact test, and the report's sections."""

from __future__ import annotations

import json
from typing import Any

import pytest

from searchain_graph.evaluation.comparisons import chain_text
from searchain_graph.evaluation.report import render_report
from searchain_graph.evaluation.significance import clustered_share, mcnemar_exact, paired_difference


def test_a_share_of_nodes_is_as_uncertain_as_its_questions() -> None:
    none_misled = clustered_share([0, 0, 0], [1, 2, 0])
    assert (none_misled.hits, none_misled.total, none_misled.percent) == (0, 3, 0.0)
    assert (none_misled.low, none_misled.high) == (0.0, 0.0)
    # one question of ten holds all the misleads: 10 of 100 nodes, but one draw, not ten
    clustered = clustered_share([10] + [0] * 9, [10] * 10)
    spread = clustered_share([1] * 10, [10] * 10)
    assert clustered.percent == pytest.approx(10.0) and spread.percent == pytest.approx(10.0)
    assert clustered.low == 0.0 and clustered.high >= 20.0
    assert spread.low == spread.high == pytest.approx(10.0)  # every question alike: no spread to draw
    assert clustered_share([10] + [0] * 9, [10] * 10) == clustered  # reproducible


@pytest.mark.parametrize(
    ("hits", "totals", "words"),
    [([1], [1, 2], "one entry per question"), ([3], [2], "between 0 and its total"), ([0, 0], [0, 0], "no items")],
)
def test_a_bad_share_is_refused(hits: list[int], totals: list[int], words: str) -> None:
    with pytest.raises(ValueError, match=words):
        clustered_share(hits, totals)


def test_a_clear_difference_excludes_zero_and_a_tie_does_not() -> None:
    clear = paired_difference([True] * 30 + [False] * 70, [True] * 10 + [False] * 90)
    assert clear.questions == 100 and clear.a_only == 20 and clear.b_only == 0
    assert clear.difference == pytest.approx(20.0)
    assert 0 < clear.low < 20 < clear.high and clear.excludes_zero
    assert clear.p_value < 1e-5
    tie = paired_difference([True, False] * 20, [False, True] * 20)
    assert tie.difference == pytest.approx(0.0) and tie.low < 0 < tie.high and not tie.excludes_zero
    assert tie.p_value == pytest.approx(1.0)


def test_the_interval_is_reproducible_and_reads_the_pairs() -> None:
    a = [True, True, False, True, False, False, True, False, True, True]
    b = [False, True, False, False, False, True, True, False, False, True]
    assert paired_difference(a, b) == paired_difference(a, b)
    # The same outcomes unpaired differently give another discordance, hence another interval.
    assert paired_difference(a, b).a_only == 3 and paired_difference(a, b).b_only == 1


def test_mcnemar_exact_against_hand_counts() -> None:
    assert mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(10, 0) == pytest.approx(2 / 1024)
    assert mcnemar_exact(3, 1) == pytest.approx(2 * 5 / 16)
    assert 0 < mcnemar_exact(2000, 1900) < 1  # large counts: exact integer arithmetic, no overflow


def test_bad_pairs_are_refused() -> None:
    with pytest.raises(ValueError, match="one entry per question each, got 2 and 1"):
        paired_difference([True, False], [True])
    with pytest.raises(ValueError, match="no questions"):
        paired_difference([], [])


def _record(qid: str, method: str, right: bool, **extra: Any) -> dict[str, Any]:
    return {
        "qid": qid,
        "dataset": "hotpotqa",
        "method": method,
        "question": f"Where do buses in town {qid} leave from?",
        "answers": ["x"],
        "prediction": extra.pop("prediction", "x" if right else "y"),
        "final_content": extra.pop("final_content", ""),
        "metrics": {"cover_em": float(right), "em": float(right), "f1": float(right)},
        "usage": {},
        "rounds": 1,
        "seconds": 1.0,
        "sources": extra.pop("sources", []),
        "cited": 1,
        **extra,
    }


def test_the_report_gives_paired_differences_changes_and_copies() -> None:
    records = []
    for i in range(40):
        records.append(_record(f"q{i}", "searchain", i < 20, sources=["corrected"] if i < 10 else ["llm"]))
        records.append(_record(f"q{i}", "searchain_no_ir", i < 5 or 30 <= i < 32))
        records.append(_record(f"q{i}", "cot", i % 2 == 0))
    records.append(_record("q99", "searchain_no_ir", False, prediction="Toronto Coach Terminal"))
    text = render_report(records)
    assert "## Paired differences" in text
    row = next(line for line in text.splitlines() if line.startswith("| hotpotqa | searchain_no_ir | 40 |"))
    assert "+32.5" in row and "| 15 / 2 |" in row and "SearChain ahead" in row
    cot = next(line for line in text.splitlines() if line.startswith("| hotpotqa | cot | 40 |"))
    assert "within noise" in cot
    # IR changed the path on q0..q9: SearChain right on all, w/o IR right on q0..q4: 5 helps, 5 neutral.
    assert "| hotpotqa | 10 | 10 | 5 (50.0%) | 0 (0.0%) | 5 (50.0%) |" in text
    copies = next(line for line in text.splitlines() if line.startswith("| searchain_no_ir | 41 |"))
    assert "| 0 (0.0%) |" in copies  # Figure 8's demonstrations name no Toronto ...
    assert "answers citing no passage: 0 of 40" in text


def test_chain_text_reads_every_round() -> None:
    tree = {
        "tree": [
            {"round": 1, "nodes": [{"query": "q", "answer": "a"}], "final_content": "f"},
            {"round": 1, "checks": []},
            {"round": 2, "nodes": [{"query": "q", "answer": None}], "final_content": None},
        ]
    }
    assert chain_text({"tree": tree, "final_content": "traced"}) == "a\nf"
    assert chain_text({"tree": None, "final_content": "c"}) == "c"


def test_the_report_counts_each_chain_repair() -> None:
    warned = [
        "round 1: node 2's answer 'X is X.' only restates its query or says it is unknown; treated as unsolved",
        "round 2: node 1's answer 'unknown' only restates its query or says it is unknown; treated as unsolved",
        "round 1: the chain asks 'q' again (node 3, first asked as node 1): a loop; the chain ends at node 2",
    ]
    records = [_record("q1", "searchain", True, warnings=warned), _record("q2", "searchain", False, warnings=[])]
    text = render_report(records)
    assert "| searchain | 2 | 1 (1) | 0 (0) | 1 (2) | 0 (0) | 0 (0) | 0 (0) | 0 (0) |" in text
    assert "Chain repairs" not in render_report([_record("q1", "cot", True, warnings=[])])


def test_a_lead_needs_the_interval_and_mcnemar_to_agree() -> None:
    from searchain_graph.evaluation.comparisons import reading

    few = paired_difference([True] * 4 + [False] * 11, [False] * 15)
    assert few.excludes_zero and few.p_value > 0.05  # 4 against 0: the bootstrap alone would claim it
    assert reading(few) == "within noise"
    many = paired_difference([True] * 20 + [False] * 20, [False] * 40)
    assert reading(many) == "SearChain ahead"
    assert reading(paired_difference([False] * 40, [True] * 20 + [False] * 20)) == "SearChain behind"


def _changed(source: str, title: str, said: str | None) -> dict[str, Any]:
    query = "Who wrote Sexual Politics?"
    record = _record("q1", "searchain", True, sources=[source])
    text = "Kate Millett wrote Sexual Politics; she studied at Oxford."
    record["supporting"] = [{"title": "Kate Millett", "text": text}]
    record["tree"] = {
        "tree": [{"round": 1, "nodes": [{"index": 1, "query": query, "answer": said}]}],
        "references": [
            {"query": query, "source": source, "round": 1, "document": {"metadata": {"title": title}}, "answer": "g"}
        ],
    }
    return record


@pytest.mark.parametrize(
    ("source", "title", "said", "verdict"),
    [
        ("corrected", "Kate Millett", "Michael Walzer", "helps"),  # IR read a supporting paragraph
        ("corrected", "Sexual Politics (film)", "Kate Millett", "misleads"),  # the LLM was right by the evidence
        ("corrected", "Sexual Politics (film)", "Michael Walzer", "neutral"),
        ("completed", "Sexual Politics (film)", None, "neutral"),
        ("completed", "Kate Millett", None, "helps"),
    ],
)
def test_each_changed_node_is_judged_by_the_gold_paragraphs(
    source: str, title: str, said: str | None, verdict: str
) -> None:
    from searchain_graph.evaluation.node_judges import judge_change

    record = _changed(source, title, said)
    assert judge_change(record, record["tree"]["references"][0]) == verdict
    cells = ["1 (100.0%)" if kind == verdict else "0 (0.0%)" for kind in ("helps", "misleads", "neutral")]
    text = render_report([record])
    assert "| hotpotqa | supporting paragraphs | 1 | " + " | ".join(cells) + " |" in text
    assert "| sub-answers |" not in text  # HotpotQA gives no decomposition


def _debs() -> dict[str, Any]:
    """The recorded tree of a MuSiQue question (Qwen2.5-Coder-1.5B, round 1, trimmed to what is read).

    Gold: the 1912 socialist candidate, Eugene V. Debs, was of the Socialist Party of America. IR
    read Debs' (gold) page and replaced the LLM's right "Socialist Party" with "trade unionist".
    """
    who = "Who was the socialist candidate in 1912?"
    party = "What political party did Eugene V. Debs belong to?"
    record = _record(
        "2hop__82858_654855",
        "searchain",
        False,
        dataset="musique",
        answers=["Socialist Party of America", "Democrat", "Democratic Party"],
        prediction="Socialist Party",
        hop_answers=["Eugene V. Debs", "Socialist Party of America"],
        supporting=[
            {"title": "Eugene V. Debs", "text": "Eugene Victor Debs was an American socialist, trade unionist."}
        ],
    )
    record["tree"] = {
        "tree": [_round(1, [(who, "Eugene V. Debs"), (party, "Socialist Party")], [])],
        "references": [
            {"query": who, "source": "llm", "round": 1, "reader_answer": "Eugene V. Debs"},
            {
                "query": party,
                "source": "corrected",
                "round": 1,
                "document": {"metadata": {"title": "Eugene V. Debs"}},
                "reader_answer": "trade unionist",
            },
        ],
    }
    return record


def test_the_sub_answer_judge_catches_a_correction_the_paragraph_judge_calls_help() -> None:
    from searchain_graph.evaluation.node_judges import judge_by_answers, judge_change

    record = _debs()
    corrected = record["tree"]["references"][1]
    assert judge_change(record, corrected) == "helps"  # a gold page
    assert judge_by_answers(record, corrected) == "misleads"  # the LLM had (a part of) the party; g is not one
    text = render_report([record])
    assert "| musique | supporting paragraphs | 1 | 1 (100.0%) | 0 (0.0%) | 0 (0.0%) |" in text
    assert "| musique | sub-answers | 1 | 0 (0.0%) | 1 (100.0%) | 0 (0.0%) | [100.0, 100.0] |" in text
    assert "| musique | supporting paragraphs | 1 | 1 (100.0%) | 0 (0.0%) | 0 (0.0%) | [0.0, 0.0] |" in text


def test_a_record_without_text_keeps_its_scores_and_judged_nodes() -> None:
    from searchain_graph.evaluation.harness import TEXT_FIELDS, without_text

    record = _debs()
    bare = without_text(record)
    assert not set(TEXT_FIELDS) & set(bare) and "Debs" not in json.dumps({k: v for k, v in bare.items()})
    assert bare["node_verdicts"] == {"supporting paragraphs": ["helps"], "sub-answers": ["misleads"]}
    assert (bare["prediction"], bare["metrics"], bare["sources"]) == (
        record["prediction"],
        record["metrics"],
        record["sources"],
    )
    assert without_text(bare) is bare  # already without text
    full, shared = render_report([record]), render_report([bare])
    for row in ("| musique | supporting paragraphs | 1 | 1 (100.0%)", "| musique | sub-answers | 1 | 0 (0.0%) | 1"):
        assert row in full and row in shared
    assert "Tree-of-Reasoning" in full and "Tree-of-Reasoning" not in shared  # no page to link
    no_gold = without_text({k: v for k, v in record.items() if k not in ("supporting", "hop_answers")})
    assert "node_verdicts" not in no_gold  # nothing to judge by


def test_reads_under_and_over_theta_are_judged_by_band_of_f() -> None:
    from searchain_graph.evaluation.node_judges import threshold_section

    record = _debs()
    who, party = (n["query"] for n in record["tree"]["tree"][0]["nodes"])
    record["tree"]["tree"][0]["checks"] = [
        {"node": 1, "action": "pass", "confidence": 0.44, "reader_answer": "Eugene V. Debs"},  # both right
        {"node": 2, "action": "correction", "confidence": 5.13, "reader_answer": "trade unionist"},
    ]
    record["tree"]["tree"].append(
        _round(
            2,
            [(who, "Norman Thomas"), (party, "Democrats")],
            [
                {"node": 1, "action": "pass", "confidence": 3.9, "reader_answer": "Eugene V. Debs"},  # help left
                {"node": 2, "action": "duplicate"},  # not read
            ],
        )
    )
    rows = [line for line in threshold_section([record], ["musique"]) if line.startswith("| musique")]
    assert rows == [
        "| musique | (0, 2] | 1 | 0 | 0 | 1 | 0 | 0 | 0 |",
        "| musique | (3, 4] | 1 | 1 | 0 | 0 | 0 | 0 | 0 |",
        "| musique | (5, 6] | 1 | 0 | 0 | 0 | 0 | 1 | 0 |",
    ]
    assert threshold_section([{**record, "hop_answers": None}], ["musique"]) == []  # no sub-answers: no section


@pytest.mark.parametrize(
    ("query", "said", "g", "verdict"),
    [
        # A gold value the query states is not what the node asks: the tautology is not right.
        ("Who directed Phalitamsha?", "Phalitamsha is directed by Phalitamsha.", "Puttanna Kanagal", "helps"),
        ("Who played for the Pirates?", None, "Pirates", "neutral"),  # g only restates the query's words
        ("Which team?", "Baseball.", "Pirates", "helps"),  # a part of a gold value gives it
        ("Which country?", "United Kingdom", "United States", "misleads"),  # one shared word is not the value
        ("Which team?", "the Pittsburgh Pirates", "Pirates", "neutral"),  # both give it
        ("Which team?", "Mets", "Yankees", "misleads"),
        ("Which team?", "Yankees", "Red Sox", "neutral"),  # neither
    ],
)
def test_the_sub_answer_judge_matches_values_not_words(query: str, said: str | None, g: str, verdict: str) -> None:
    from searchain_graph.evaluation.node_judges import judge_by_answers

    record = _record("q", "searchain", True, dataset="musique", answers=["Pittsburgh Pirates", "Mets"])
    record["hop_answers"] = ["Puttanna Kanagal", "Phalitamsha", "United Kingdom"]
    source = "completed" if said is None else "corrected"
    record["tree"] = {"tree": [_round(1, [(query, said)], [])]}
    ref = {"query": query, "source": source, "round": 1, "reader_answer": g}
    assert judge_by_answers(record, ref) == verdict
    assert judge_by_answers({**record, "hop_answers": []}, ref) is None  # no decomposition: no verdict


def test_old_records_get_their_gold_from_the_dataset_and_nothing_else_changes() -> None:
    from searchain_graph.evaluation.harness import gold_fields, with_gold

    example = {
        "qid": "2hop__82858_654855",
        "dataset": "musique",
        "paragraphs": [
            {"title": "Eugene V. Debs", "text": "A socialist.", "is_supporting": True},
            {"title": "1920 United States presidential election", "text": "Debs ran.", "is_supporting": False},
        ],
        "decomposition": [
            {"question": "Who ran as the socialist candidate in 1912?", "answer": "Eugene V. Debs"},
            {"question": "What party was Eugene V. Debs a member of?", "answer": "Socialist Party of America"},
        ],
    }
    assert gold_fields(example) == {  # type: ignore[arg-type]
        "supporting": [{"title": "Eugene V. Debs", "text": "A socialist."}],
        "hop_answers": ["Eugene V. Debs", "Socialist Party of America"],
    }
    old = _debs()
    del old["hop_answers"]
    kept = {**old, "supporting": [{"title": "kept", "text": "as written"}]}
    other = _record("other", "searchain", True, dataset="musique", tree={"tree": []})
    no_tree = _record("2hop__82858_654855", "cot", True, dataset="musique")
    filled = with_gold([old, kept, other, no_tree], [example])  # type: ignore[list-item]
    assert filled[0]["hop_answers"] == ["Eugene V. Debs", "Socialist Party of America"] and "hop_answers" not in old
    assert filled[1]["supporting"] == [{"title": "kept", "text": "as written"}]  # a field written is not replaced
    assert filled[2] is other and filled[3] is no_tree


def _missed(nodes: list[tuple[str, str]], checks: list[tuple[str, str, str]]) -> dict[str, Any]:
    """A wrong SearChain answer to "Who wrote Sexual Politics?" (gold: Kate Millett), its one round's tree.

    ``nodes``: (query, LLM's answer); ``checks``: (action, passage title, g).
    """
    record = _record("q1", "searchain", False, prediction="Michael Walzer")
    record["answers"] = ["Kate Millett"]
    record["supporting"] = [
        {"title": "Sexual Politics", "text": "Sexual Politics is a 1970 book."},
        {"title": "Kate Millett", "text": "Kate Millett wrote Sexual Politics."},
    ]
    record["tree"] = {
        "tree": [
            {
                "round": 1,
                "nodes": [{"index": i, "query": q, "answer": a} for i, (q, a) in enumerate(nodes, 1)],
                "checks": [
                    {"node": i, "action": act, "passage": {"title": title}, "reader_answer": g}
                    for i, (act, title, g) in enumerate(checks, 1)
                ],
            }
        ]
    }
    return record


@pytest.mark.parametrize(
    ("nodes", "checks", "stage"),
    [
        # The LLM said it in round 1 (or IR sent it back), yet the final answer is another.
        ([("Who wrote it?", "Kate Millett wrote it.")], [("pass", "Kate Millett", "Kate Millett")], "in the chain"),
        ([("Who wrote it?", "Walzer")], [("correction", "Kate Millett", "Kate Millett")], "in the chain"),
        # The reader found it in the right paragraph but was not confident: the LLM's answer stood.
        ([("Who wrote it?", "Walzer")], [("pass", "Kate Millett", "Kate Millett")], "read, under θ"),
        ([("Who wrote it?", "Walzer")], [("pass", "Kate Millett", "1970")], "read, reader missed"),
        # A supporting paragraph without the answer is not the answer's paragraph.
        ([("Who wrote it?", "Walzer")], [("pass", "Sexual Politics", "1970")], "never read"),
        ([("Who wrote it?", "Walzer")], [("correction", "Walzer", "Walzer")], "never read"),
    ],
)
def test_a_wrong_answer_is_placed_where_it_lost_the_gold_answer(
    nodes: list[tuple[str, str]], checks: list[tuple[str, str, str]], stage: str
) -> None:
    from searchain_graph.evaluation.comparisons import LOSSES, where_lost

    record = _missed(nodes, checks)
    got = where_lost(record)
    assert got.startswith(stage) and got in LOSSES
    text = render_report([record])
    cells = ["1 (100.0%)" if kind == got else "0 (0.0%)" for kind in LOSSES]
    assert "| hotpotqa | 1 | " + " | ".join(cells) + " |" in text


def test_the_misses_leave_out_right_answers_and_yes_no_questions() -> None:
    from searchain_graph.evaluation.comparisons import misses_section, where_lost

    record = _missed([("Is it a book?", "yes")], [("pass", "Sexual Politics", "yes")])
    record["answers"] = ["no"]
    assert where_lost(record) == "no paragraph holds it"  # no paragraph says "no"
    right = _missed([("Who wrote it?", "Kate Millett")], [("pass", "Kate Millett", "Kate Millett")])
    right["metrics"] = {"cover_em": 1.0, "em": 1.0, "f1": 1.0}
    assert misses_section([right], ["hotpotqa"]) == []
    assert misses_section([{**record, "method": "ircot"}], ["hotpotqa"]) == []


def _round(rnd: int, nodes: list[tuple[str, str]], checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "round": rnd,
        "nodes": [{"index": i, "query": q, "answer": a, "unsolved": False} for i, (q, a) in enumerate(nodes, 1)],
        "checks": checks,
    }


def _twilight() -> dict[str, Any]:
    """The recorded tree of a 2Wiki question (Qwen2.5-Coder-1.5B, rounds 1-3, trimmed to what is read)."""
    director = "Who is the director of The Twilight Saga: Breaking Dawn – Part 2?"
    born = "When was Armand Mastroianni born?"
    first = {"round": 2, "node": 1, "query": director}
    return _record(
        "2wiki-76",
        "searchain",
        True,
        tree={
            "tree": [
                _round(1, [(director, "Stephenie Meyer.")], [{"node": 1, "query": director, "action": "not_reached"}]),
                _round(
                    2,
                    [(director, "Stephenie Meyer."), (born, "1962.")],
                    [
                        {"node": 1, "query": director, "action": "correction", "reader_answer": "Bill Condon"},
                        {"node": 2, "query": born, "action": "correction", "reader_answer": "August 1, 1948"},
                    ],
                ),
                _round(
                    3,
                    [(director, "Stephenie Meyer."), (born, "1948."), ("When was Stephenie Meyer born?", "1974.")],
                    [
                        {"node": 1, "query": director, "action": "duplicate", "duplicate_of": first},
                        {
                            "node": 2,
                            "query": born,
                            "action": "duplicate",
                            "duplicate_of": {"round": 2, "node": 2, "query": born},
                        },
                        {"node": 3, "query": "When was Stephenie Meyer born?", "action": "pass"},
                    ],
                ),
            ]
        },
    )


def test_a_correction_the_llm_takes_back_is_counted_and_a_shortened_one_is_not() -> None:
    from searchain_graph.evaluation.comparisons import reverted_nodes, reverts_section

    record = _twilight()
    # "1948." keeps "August 1, 1948"; "Stephenie Meyer." drops "Bill Condon".
    assert reverted_nodes(record) == [
        {
            "round": 3,
            "query": "Who is the director of The Twilight Saga: Breaking Dawn – Part 2?",
            "ir_answer": "Bill Condon",
            "answer": "Stephenie Meyer.",
        }
    ]
    wrong = _record(
        "q2",
        "searchain",
        False,
        tree={
            "tree": [
                _round(
                    1,
                    [("Who is Paal Bog's father?", "Paal Bog")],
                    [
                        {
                            "node": 1,
                            "query": "Who is Paal Bog's father?",
                            "action": "completion",
                            "reader_answer": "Paal Bog",
                        }
                    ],
                ),
                _round(
                    2,
                    [("Who is Paal Bog's father?", "Paal Bog's father is Paal Bog.")],
                    [
                        {
                            "node": 1,
                            "query": "Who is Paal Bog's father?",
                            "action": "duplicate",
                            "duplicate_of": {"round": 1, "node": 1},
                        }
                    ],
                ),
            ]
        },
    )
    assert reverted_nodes(wrong) == []  # g says nothing beyond the query's words: never counted
    assert "\n".join(reverts_section([record, wrong], ["searchain"])).endswith(
        "| searchain | 2 | 1 | 1 (50.0%) | 1 (100.0%) | 0 (0.0%) |"
    )
    assert render_report([record, wrong]).count("## Corrections the LLM took back") == 1


@pytest.mark.parametrize(
    "tree",
    [
        None,
        {},
        {"tree": None},
        {"tree": [{"round": 1}]},
        {"tree": [{"nodes": [], "checks": [{"action": "duplicate"}]}]},
    ],
)
def test_takebacks_read_trees_without_their_parts(tree: Any) -> None:
    from searchain_graph.evaluation.comparisons import reverted_nodes, reverts_section

    record = _record("q", "searchain", True, tree=tree)
    assert reverted_nodes(record) == []
    section = reverts_section([record], ["searchain"])
    # A repeat that names no earlier node is counted as a repeat, never as a take-back.
    assert section == [] or section[-1] == "| searchain | 1 | 0 | 0 (0.0%) | – | 1 (100.0%) |"


def test_a_hit_on_words_the_question_states_is_shown_beside_cover_em() -> None:
    from searchain_graph.evaluation.comparisons import restated, restated_section

    # MuSiQue 2hop__84971_67668 (recorded): the alias "Batman" covers the question's own film title.
    olaf = {
        "qid": "2hop__84971_67668",
        "dataset": "musique",
        "method": "searchain",
        "question": 'The actor who plays Count Olaf in "A Series of Unfortunate Events" also plays which '
        "character in Batman Under the Red Hood?",
        "answers": ["Nightwing / Dick Grayson", "Nightwing", "Dick Grayson", "Batman"],
        "prediction": "Batman Under the Red Hood",
        "metrics": {"cover_em": 1.0, "em": 0.0, "f1": 0.4},
    }
    right = {**olaf, "prediction": "Dick Grayson", "metrics": {"cover_em": 1.0, "em": 1.0, "f1": 1.0}}
    covered = {**olaf, "prediction": "Nightwing, in Batman", "metrics": {"cover_em": 1.0, "em": 0.0, "f1": 0.5}}
    wrong = {
        **olaf,
        "qid": "another",
        "prediction": "Jensen Ackles",
        "metrics": {"cover_em": 0.0, "em": 0.0, "f1": 0.0},
    }
    assert restated(olaf)
    assert not restated(right)  # an exact match is never flagged
    assert not restated(covered)  # one found gold ("Nightwing") is not in the question
    assert not restated(wrong)
    rows = restated_section([olaf, right, covered, wrong], ["musique"], ["searchain", "ircot"])
    assert rows[1] == "## Right by cover-EM on words of the question"
    assert "| musique | searchain | 3 | 1 | 50.0 | Batman Under the Red Hood |" in rows
    assert restated_section([right, wrong], ["musique"], ["searchain"]) == []
    assert "## Right by cover-EM on words of the question" in render_report([olaf, wrong])
