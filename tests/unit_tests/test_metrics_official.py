"""EM and F1 equal the official scripts' numbers exactly.

The reference functions below are written here from the published definitions, not
imported or copied:

* SQuAD v1.1, ``evaluate-v1.1.py`` (Rajpurkar et al., 2016, "SQuAD: 100,000+ Questions for
  Machine Comprehension of Text"): ``normalize_answer`` lower-cases, deletes every
  character of ``string.punctuation``, replaces ``\\b(a|an|the)\\b`` by a space and
  collapses whitespace with ``" ".join(text.split())``; ``exact_match_score`` compares the
  normalised strings; ``f1_score`` is token F1 over the normalised tokens with a
  ``collections.Counter`` intersection, 0 when nothing is shared;
  ``metric_max_over_ground_truths`` takes the maximum over the gold answers.
* HotpotQA, ``hotpot_evaluate_v1.py`` (Yang et al., 2018, "HotpotQA: A Dataset for Diverse,
  Explainable Multi-hop Question Answering"): the same normalisation and EM, and an
  ``f1_score`` that is 0 whenever the normalised prediction or the normalised gold is one of
  ``yes``, ``no``, ``noanswer`` and the two differ.

The package's functions are checked against them with ``==`` (no tolerance) on hand-picked
pairs, on a few thousand generated pairs and on every (prediction, answers) pair recorded in
``docs/results/*.jsonl``.
"""

from __future__ import annotations

import json
import random
import re
import string
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from searchain_graph.evaluation.metrics import exact_match, f1, label_prediction, normalize_answer, score

RESULTS = Path(__file__).resolve().parents[2] / "docs" / "results"
RECORDED = {"hotpotqa": "multihop", "musique": "multihop", "strategyqa": "yesno"}


# --- the official definitions, re-implemented ------------------------------------------


def ref_normalize(s: str) -> str:
    """SQuAD v1.1 / HotpotQA ``normalize_answer``: lower, remove punc, remove articles, fix whitespace."""
    lowered = s.lower()
    no_punc = "".join(ch for ch in lowered if ch not in set(string.punctuation))
    no_articles = re.sub(r"\b(a|an|the)\b", " ", no_punc)
    return " ".join(no_articles.split())


def ref_em(prediction: str, ground_truth: str) -> bool:
    """``exact_match_score`` of both scripts."""
    return ref_normalize(prediction) == ref_normalize(ground_truth)


def ref_squad_f1(prediction: str, ground_truth: str) -> float:
    """``f1_score`` of SQuAD v1.1's ``evaluate-v1.1.py``."""
    pred_tokens = ref_normalize(prediction).split()
    gold_tokens = ref_normalize(ground_truth).split()
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0
    p = 1.0 * same / len(pred_tokens)
    r = 1.0 * same / len(gold_tokens)
    return (2 * p * r) / (p + r)


def ref_hotpot_f1(prediction: str, ground_truth: str) -> float:
    """The F1 of ``f1_score`` in HotpotQA's ``hotpot_evaluate_v1.py`` (which also returns P and R)."""
    norm_pred, norm_gold = ref_normalize(prediction), ref_normalize(ground_truth)
    if norm_pred in ["yes", "no", "noanswer"] and norm_pred != norm_gold:
        return 0
    if norm_gold in ["yes", "no", "noanswer"] and norm_pred != norm_gold:
        return 0
    return ref_squad_f1(prediction, ground_truth)


def ref_max(metric: Callable[[str, str], float], prediction: str, ground_truths: Sequence[str]) -> float:
    """``metric_max_over_ground_truths`` of both scripts."""
    return max(metric(prediction, gt) for gt in ground_truths)


def assert_official(prediction: str, golds: Sequence[str]) -> None:
    assert normalize_answer(prediction) == ref_normalize(prediction), prediction
    assert exact_match(prediction, golds) == float(ref_max(ref_em, prediction, golds)), (prediction, golds)
    assert f1(prediction, golds) == ref_max(ref_hotpot_f1, prediction, golds), (prediction, golds)
    assert f1(prediction, golds, yes_no_rule=False) == ref_max(ref_squad_f1, prediction, golds), (prediction, golds)


# --- (a) hand-picked pairs ----------------------------------------------------------------

TRICKY: list[tuple[str, list[str]]] = [
    # hyphens are deleted, not split on
    ("Mountbatten-Windsor", ["Mountbatten-Windsor"]),
    ("Mountbatten Windsor", ["Mountbatten-Windsor"]),
    ("Windsor", ["Mountbatten-Windsor"]),
    ("co-founder", ["cofounder"]),
    ("Saint-Saëns", ["Saint Saëns"]),
    # commas and points in numbers
    ("3,384,569", ["3384569"]),
    ("3 384 569", ["3,384,569"]),
    ("1,000", ["1000"]),
    ("1.000", ["1,000"]),
    ("3.5 million", ["3,5 million"]),
    ("$1,000,000", ["1000000 dollars"]),
    ("50%", ["50 percent"]),
    # dotted abbreviations
    ("U.S.", ["US"]),
    ("u s", ["U.S."]),
    ("U.S.A.", ["United States", "USA"]),
    ("J. R. R. Tolkien", ["J.R.R. Tolkien"]),
    ("St. Louis", ["St Louis"]),
    # articles
    ("the Beatles", ["Beatles"]),
    ("The The", ["the"]),
    ("A Tribe Called Quest", ["Tribe Called Quest"]),
    ("an apple a day", ["apple day"]),
    ("theatre", ["atheist"]),
    ("Anne the Anthem", ["anne anthem"]),
    ("a.k.a. The Boss", ["aka boss"]),
    ("the-the", ["thethe"]),
    ("THE END", ["end"]),
    # Unicode punctuation stays (only string.punctuation is deleted)
    ("“Toronto”", ["Toronto"]),
    ("Spirit If…", ["Spirit If..."]),
    ("«Spirit If»", ["Spirit If"]),
    ("rock—and—roll", ["rock and roll"]),
    ("It’s", ["It's"]),
    ("¿Qué?", ["qué"]),
    ("Ｔｏｒｏｎｔｏ", ["Toronto"]),
    ("İstanbul", ["istanbul"]),
    ("Pál Gábor", ["pal gabor", "Pál Gábor"]),
    ("non\u00a0breaking\tspace\nhere", ["non breaking space here"]),
    # empty strings and strings that normalise to nothing
    ("", [""]),
    ("", ["Toronto"]),
    ("Toronto", [""]),
    ("The.", ["the"]),
    ("...", ["a an the"]),
    ("   ", ["\t"]),
    ("", ["yes"]),
    # yes / no / noanswer against longer answers
    ("yes", ["yes"]),
    ("Yes.", ["yes"]),
    ("yes", ["no"]),
    ("Yes, frost is common.", ["yes"]),
    ("yes", ["yes it is"]),
    ("no way", ["no"]),
    ("no", ["No, not at all"]),
    ("noanswer", ["no answer"]),
    ("no answer", ["noanswer"]),
    ("No-answer", ["noanswer"]),
    ("yes no", ["yes", "no"]),
    ("the yes", ["yes"]),
    ("yes", ["maybe", "yes"]),
    # token multiplicity and several golds
    ("new new york", ["New York"]),
    ("born in Toronto Ontario", ["Toronto"]),
    ("Toronto bus terminal", ["Montreal", "Toronto Coach Terminal", "TCT"]),
    ("Paris", ["London"]),
    ("Chief of Protocol", ["Chief of Protocol", "chief-of-protocol"]),
]


@pytest.mark.parametrize(("prediction", "golds"), TRICKY)
def test_hand_picked_pairs_equal_the_official_scripts(prediction: str, golds: list[str]) -> None:
    assert_official(prediction, golds)


def test_the_differences_the_old_normalisation_had() -> None:
    assert normalize_answer("Mountbatten-Windsor") == "mountbattenwindsor"
    assert normalize_answer("3,384,569") == "3384569"
    assert exact_match("U.S.", ["US"]) == 1.0
    assert exact_match("1,000", ["1000"]) == 1.0
    assert f1("yes it is", ["yes"]) == 0.0
    assert f1("yes it is", ["yes"], yes_no_rule=False) == 0.5


# --- (b) generated pairs ------------------------------------------------------------------

WORDS = [
    "toronto", "Coach", "terminal", "New", "York", "new", "Kevin", "Drew", "windsor",
    "theatre", "another", "Anne", "thereafter", "Yes", "no", "NO", "noanswer", "yes",
    "Pál", "Gábor", "İstanbul", "ß", "café", "naïve", "x", "s", "I", "O'Neil", "rock'n'roll",
]  # fmt: skip
ARTICLES = ["a", "an", "the", "A", "An", "The", "THE", "tHe"]
PUNCT = list(string.punctuation) + ["“", "”", "‘", "’", "…", "—", "–", "«", "»", "¿", "¡", "·", "\u00a0"]
SPACES = [" ", " ", " ", "  ", "\t", "\n"]


def _token(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.45:
        word = rng.choice(WORDS)
    elif roll < 0.65:
        word = rng.choice(ARTICLES)
    elif roll < 0.85:
        word = rng.choice(
            [
                str(rng.randint(0, 99)),
                f"{rng.randint(1, 999)},{rng.randint(0, 999):03d}",
                f"{rng.randint(1, 9)}.{rng.randint(0, 99)}",
                f"{rng.randint(1, 9)},{rng.randint(100, 999)},{rng.randint(100, 999)}",
            ]
        )
    else:
        word = "".join(rng.choice(string.ascii_letters) + "." for _ in range(rng.randint(1, 3)))  # U.S.A.
    if rng.random() < 0.3:
        word = rng.choice(PUNCT) + word if rng.random() < 0.5 else word + rng.choice(PUNCT)
    if rng.random() < 0.1:
        word += rng.choice("-/'") + rng.choice(WORDS + ARTICLES)  # Mountbatten-Windsor, and/or, the-the
    return word


def _text(rng: random.Random, n: int) -> str:
    out = ""
    for i in range(n):
        out += (rng.choice(SPACES) if i else "") + _token(rng)
    return out


def _mutate(rng: random.Random, gold: str) -> str:
    """A prediction near the gold: drop, add, repeat or re-punctuate some tokens."""
    tokens = gold.split()
    out = []
    for tok in tokens:
        roll = rng.random()
        if roll < 0.15:
            continue
        if roll < 0.3:
            tok = "".join(ch for ch in tok if ch not in string.punctuation) or tok
        elif roll < 0.4:
            tok = tok.replace(",", " ").replace("-", " ").replace(".", " ")
        elif roll < 0.5:
            out.append(_token(rng))
        elif roll < 0.55:
            out.append(tok)
        out.append(tok.upper() if rng.random() < 0.2 else tok)
    if rng.random() < 0.3:
        out.insert(rng.randint(0, len(out)), rng.choice(ARTICLES))
    return " ".join(out)


def _generated_pairs(n: int, seed: int = 20240607) -> list[tuple[str, list[str]]]:
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        golds = [_text(rng, rng.randint(0, 4)) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        roll = rng.random()
        if roll < 0.1:
            golds[0] = rng.choice(["yes", "no", "Yes.", "NO", "noanswer", "the yes", "No!"])
        if roll < 0.15:
            prediction = rng.choice(["yes", "no", "Yes,", "no.", "noanswer", "yes " + golds[0]])
        elif roll < 0.6:
            prediction = _mutate(rng, rng.choice(golds))
        elif roll < 0.7:
            prediction = rng.choice(golds)
        else:
            prediction = _text(rng, rng.randint(0, 6))
        pairs.append((prediction, golds))
    return pairs


def test_generated_pairs_equal_the_official_scripts() -> None:
    pairs = _generated_pairs(4000)
    for prediction, golds in pairs:
        assert_official(prediction, golds)
    # The generator reaches the interesting cases, so the check above means something.
    ems = [ref_max(ref_em, p, g) for p, g in pairs]
    f1s = [ref_max(ref_hotpot_f1, p, g) for p, g in pairs]
    squad = [ref_max(ref_squad_f1, p, g) for p, g in pairs]
    assert sum(ems) > 200
    assert sum(0 < v < 1 for v in f1s) > 500
    assert sum(a != b for a, b in zip(f1s, squad, strict=True)) > 20  # the yes/no rule bites
    assert sum(normalize_answer(p) == "" for p, _ in pairs) > 20


# --- (c) pairs recorded by the evaluation runs --------------------------------------------


def _recorded(dataset: str) -> list[tuple[str, list[str]]]:
    path = RESULTS / f"{dataset}.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is absent")
    with path.open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle if line.strip()]
    return [(r.get("prediction") or "", list(r["answers"])) for r in records]


@pytest.mark.parametrize("dataset", sorted(RECORDED))
def test_recorded_pairs_equal_the_official_scripts(dataset: str) -> None:
    pairs = _recorded(dataset)
    assert len(pairs) > 100
    task = RECORDED[dataset]
    for prediction, golds in pairs:
        assert_official(prediction, golds)
        labelled = label_prediction(prediction, task)  # what score() scores for yes/no tasks
        assert_official(labelled, golds)
        scored = score(prediction, golds, task)
        assert scored["em"] == float(ref_max(ref_em, labelled, golds))
        assert scored["f1"] == ref_max(ref_hotpot_f1, labelled, golds)
