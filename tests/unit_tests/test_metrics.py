"""Answer metrics, checked against numbers worked out by hand."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from searchain_graph.evaluation.datasets import Example
from searchain_graph.evaluation.metrics import cover_em, exact_match, f1, label_prediction, rouge_l, score


def test_cover_em_is_token_aligned_containment_after_normalisation() -> None:
    assert cover_em("He was born in “Toronto”, Ontario.", ["Toronto"]) == 1.0
    assert cover_em("The Toronto Coach Terminal", ["toronto coach terminal"]) == 1.0
    assert cover_em("A Torontonian", ["Toronto"]) == 0.0  # not on a token boundary
    assert cover_em("Coach Terminal, Toronto", ["Toronto Coach Terminal"]) == 0.0  # order matters
    assert cover_em("It is in Toronto…", ["Montreal", "Toronto"]) == 1.0  # any alias
    assert cover_em("Toronto", ["Toronto Coach Terminal"]) == 0.0  # the gold must be inside the prediction


def test_exact_match_is_squad_em_over_aliases() -> None:
    assert exact_match("the Toronto Coach Terminal.", ["Toronto Coach Terminal"]) == 1.0
    assert exact_match("Toronto Coach Terminal in Ontario", ["Toronto Coach Terminal"]) == 0.0
    assert exact_match("U.S.", ["United States", "U.S."]) == 1.0
    # Punctuation is deleted, as in SQuAD's evaluate-v1.1.py: "U.S." normalises to "us".
    assert exact_match("us", ["U.S."]) == 1.0
    assert exact_match("u s", ["U.S."]) == 0.0
    assert exact_match("Mountbatten Windsor", ["Mountbatten-Windsor"]) == 0.0
    assert exact_match("3384569", ["3,384,569"]) == 1.0


def test_f1_hand_computed() -> None:
    assert f1("the Toronto Coach Terminal", ["Toronto Coach Terminal"]) == 1.0
    # {toronto, bus, terminal} vs {toronto, coach, terminal}: c=2, P=R=2/3, F1=2/3.
    assert f1("Toronto bus terminal", ["Toronto Coach Terminal"]) == pytest.approx(2 / 3)
    # 1 token of 4 predicted, 1 of 1 gold: P=1/4, R=1, F1=2*(1/4)/(5/4)=0.4.
    assert f1("born in Toronto Ontario", ["Toronto"]) == pytest.approx(0.4)
    # Multiset intersection: "new new york" vs "new york": c=2, P=2/3, R=1, F1=0.8.
    assert f1("new new york", ["New York"]) == pytest.approx(0.8)
    # The best alias counts: 0 against "Montreal", 1 against "Toronto".
    assert f1("Toronto", ["Montreal", "Toronto"]) == 1.0
    assert f1("Paris", ["London"]) == 0.0


def test_rouge_l_hand_computed() -> None:
    # LCS("the cat sat on the mat", "the cat is on the mat") = 5 tokens of 6 each: F = 5/6.
    assert rouge_l("The cat sat on the mat", ["the cat is on the mat"]) == pytest.approx(5 / 6)
    # Porter stemming: "running dogs" -> run dog, "dogs ran" -> dog ran; LCS 1 of 2 each: F = 0.5.
    assert rouge_l("running dogs", ["dogs ran"]) == pytest.approx(0.5)
    # Max over references.
    assert rouge_l("the cat sat", ["dogs bark", "the cat sat"]) == pytest.approx(1.0)
    assert rouge_l("completely different", ["the cat sat"]) == 0.0


@pytest.mark.parametrize("metric", [cover_em, exact_match, f1, rouge_l])
def test_empty_inputs_score_zero(metric: Callable[[str | None, Sequence[str]], float]) -> None:
    fn = metric
    assert fn("", ["Toronto"]) == 0.0
    assert fn("   ", ["Toronto"]) == 0.0
    assert fn(None, ["Toronto"]) == 0.0
    assert fn("The.", ["Toronto"]) == 0.0  # normalises to nothing
    assert fn("Toronto", []) == 0.0
    assert fn("anything at all", ["the", "...", ""]) == 0.0


@pytest.mark.parametrize("metric", [cover_em, rouge_l])
def test_empty_gold_never_matches_in_cover_em_and_rouge(metric: Callable[[str | None, Sequence[str]], float]) -> None:
    # A gold answer that normalises to "" is skipped, so even an empty prediction misses it.
    assert metric("", [""]) == 0.0
    assert metric("The.", ["the", "..."]) == 0.0


def test_empty_gold_in_em_and_f1_as_the_official_scripts() -> None:
    # evaluate-v1.1.py compares normalised strings: "" equals "" (EM 1); F1 has no common token (0).
    assert exact_match("", [""]) == 1.0
    assert exact_match(None, ["The..."]) == 1.0
    assert exact_match("The.", ["the", "Toronto"]) == 1.0
    assert f1("", [""]) == 0.0
    assert f1("The.", ["the"]) == 0.0


def test_a_bare_string_is_one_answer() -> None:
    assert cover_em("Toronto", "Toronto") == 1.0
    assert exact_match("t", "Toronto") == 0.0  # not a list of characters


def test_unicode_punctuation_and_width_normalised_for_cover_em_only() -> None:
    # cover-EM uses the extended normalisation (NFKC, Unicode punctuation split off).
    assert cover_em("«Spirit If…»", ["Spirit If..."]) == 1.0
    assert cover_em("Ｔｏｒｏｎｔｏ", ["Toronto"]) == 1.0  # NFKC folds full-width letters
    assert cover_em("It’s “Kevin Drew”—the singer.", ["Kevin Drew"]) == 1.0
    # EM and F1 follow the official scripts: only string.punctuation is deleted, no NFKC.
    assert exact_match("«Spirit If…»", ["Spirit If..."]) == 0.0
    assert exact_match("Ｔｏｒｏｎｔｏ", ["Toronto"]) == 0.0
    assert f1("“Kevin Drew”", ["Kevin Drew"]) == 0.0  # "“kevin" and "drew”" are other tokens
    assert f1("Pál Gábor", ["Pál Gábor"]) == 1.0  # accents are kept, not stripped


@pytest.mark.parametrize(
    ("prediction", "label"),
    [
        ("Yes, frost is common.", "Yes"),
        ("no", "No"),
        ("So the final answer is No.", "No"),
        ("The answer is yes: it snows in May.", "Yes"),
        ("I cannot tell.", "I cannot tell."),
    ],
)
def test_yes_no_label(prediction: str, label: str) -> None:
    assert label_prediction(prediction, "yesno") == label


@pytest.mark.parametrize(
    ("prediction", "label"),
    [
        ("Brad Wilk did co-found Rage, but not in 1962. So the final answer is REFUTES.", "REFUTES"),
        ("supports", "SUPPORTS"),
        ("There is not enough information to decide.", "NOT ENOUGH INFO"),
        ("NOT ENOUGH INFO", "NOT ENOUGH INFO"),
        ("unclear", "unclear"),
    ],
)
def test_fact_label(prediction: str, label: str) -> None:
    assert label_prediction(prediction, "fact") == label


def test_score_yesno_normalises_before_scoring() -> None:
    assert score("Yes, frost is common.", ["yes"], "yesno") == {"cover_em": 1.0, "em": 1.0, "f1": 1.0}
    assert score("Yes, frost is common.", ["no"], "yesno") == {"cover_em": 0.0, "em": 0.0, "f1": 0.0}
    # Unnormalised (multihop): EM 0; F1 0 by HotpotQA's yes/no rule (SQuAD's F1, P=1/4, R=1, is 0.4).
    assert score("Yes, frost is common.", ["yes"], "multihop")["em"] == 0.0
    assert score("Yes, frost is common.", ["yes"], "multihop")["f1"] == 0.0
    assert f1("Yes, frost is common.", ["yes"], yes_no_rule=False) == pytest.approx(0.4)


def test_score_fact_labels() -> None:
    assert score("So the final answer is SUPPORTS.", ["SUPPORTS"], "fact")["em"] == 1.0
    assert score("So the final answer is SUPPORTS.", ["REFUTES"], "fact")["cover_em"] == 0.0
    assert score("Not enough information.", ["NOT ENOUGH INFO"], "fact")["em"] == 1.0


def test_score_longform_adds_rouge_l() -> None:
    out = score("The cat sat on the mat", ["the cat is on the mat", "dogs"], "longform")
    assert set(out) == {"cover_em", "em", "f1", "rouge_l"}
    assert out["rouge_l"] == pytest.approx(5 / 6)
    assert out["f1"] == pytest.approx(0.75)  # {cat, sat, on, mat} vs {cat, is, on, mat}: c=3, P=R=3/4
    assert score("", ["x"], "longform") == {"cover_em": 0.0, "em": 0.0, "f1": 0.0, "rouge_l": 0.0}


def test_score_takes_an_example_and_its_task() -> None:
    example: Example = {
        "qid": "q1",
        "dataset": "strategyqa",
        "question": "Is it common to see frost during some college commencements?",
        "answers": ["yes"],
        "task": "yesno",
        "hops": 2,
        "paragraphs": [],
        "decomposition": None,
        "meta": {},
    }
    assert score("Yes, frost is common.", example) == {"cover_em": 1.0, "em": 1.0, "f1": 1.0}
    assert score(None, example)["cover_em"] == 0.0
    assert set(score("x", ["x"])) == {"cover_em", "em", "f1"}  # multihop by default
    with pytest.raises(ValueError, match="unknown task"):
        score("x", ["x"], "essay")
