"""Answer metrics: cover-EM (the paper's), SQuAD EM and F1, and ROUGE-L for long-form answers.

Every metric compares one prediction with a list of gold answers (the answer and its
aliases, or ELI5's reference answers) and returns the best score over them, a float in
[0, 1]. Text is normalised with :func:`searchain_graph.method.parsing.normalize_answer`: NFKC,
lower case, ASCII and Unicode punctuation replaced by spaces (so ``“Toronto”`` and
``Toronto…`` become ``toronto``), the articles *a*, *an*, *the* removed, whitespace
collapsed.

* :func:`cover_em`: 1.0 when some normalised gold answer occurs in the normalised
  prediction on token boundaries (``"toronto"`` covers ``"born in toronto ontario"`` but
  not ``"torontonian"``), by :func:`searchain_graph.method.parsing.answer_contains`. This is the
  SearChain paper's main metric (it follows Self-Ask and DSP).
* :func:`exact_match`: 1.0 when the normalised prediction equals some normalised gold
  answer (SQuAD EM).
* :func:`f1`: SQuAD token F1 over the normalised whitespace tokens, counting repeated
  tokens with multiplicity: with ``c`` the size of the multiset intersection,
  ``P = c / len(prediction tokens)``, ``R = c / len(gold tokens)``, ``F1 = 2PR / (P + R)``
  (0 when ``c = 0``).
* :func:`rouge_l`: ROUGE-L F-measure of ``rouge-score`` with the Porter stemmer, the same
  scorer the graph uses to check long-form answers against passages. It uses its own
  tokenizer (lower case, runs of ``[a-z0-9]``), not the normalisation above, so non-ASCII
  letters are dropped: a text with only such letters scores 0.

Edge cases, the same for every metric: an empty (or whitespace-only) prediction, or one
that normalises to nothing (``"The."``), scores 0; a gold answer that normalises to
``""`` never matches anything (it is skipped; ``answer_contains`` alone would call an
empty span contained everywhere); an empty answer list scores 0. A single string passed
as ``answers`` is taken as one answer, not as a list of characters.

:func:`score` computes all the metrics that apply to a task, keyed ``cover_em``, ``em``,
``f1`` and, for ``longform``, ``rouge_l``. For ``yesno`` and ``fact`` the prediction is
first reduced to its label with :func:`searchain_graph.method.parsing.extract_final_answer`
("Yes, frost is common." → ``Yes``; "... So the final answer is REFUTES." → ``REFUTES``);
for ``fact``, a prediction that names neither SUPPORTS nor REFUTES but says "not enough
info(rmation)" becomes ``NOT ENOUGH INFO``. A prediction without a label is scored as it is.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from searchain_graph.method.parsing import answer_contains, extract_final_answer, normalize_answer
from searchain_graph.method.verdict import rouge_l as _rouge_l_one

TASKS = ("multihop", "yesno", "fact", "longform")
"""The task names :func:`score` accepts (the graph's)."""

_NOT_ENOUGH_INFO = re.compile(r"\bnot\s+enough\s+info(?:rmation)?\b", re.IGNORECASE)


def _golds(answers: Sequence[str] | str) -> list[str]:
    """The gold answers that normalise to something (a bare string is one answer)."""
    items = [answers] if isinstance(answers, str) else list(answers)
    return [a for a in items if isinstance(a, str) and normalize_answer(a)]


def cover_em(prediction: str | None, answers: Sequence[str]) -> float:
    """1.0 if a normalised gold answer occurs, token-aligned, in the normalised prediction; else 0.0."""
    if not prediction or not normalize_answer(prediction):
        return 0.0
    return float(any(answer_contains(prediction, gold) for gold in _golds(answers)))


def exact_match(prediction: str | None, answers: Sequence[str]) -> float:
    """SQuAD exact match: 1.0 if the normalised prediction equals a normalised gold answer."""
    pred = normalize_answer(prediction or "")
    if not pred:
        return 0.0
    return float(any(pred == normalize_answer(gold) for gold in _golds(answers)))


def _token_f1(prediction: list[str], gold: list[str]) -> float:
    common = sum((Counter(prediction) & Counter(gold)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(prediction), common / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1(prediction: str | None, answers: Sequence[str]) -> float:
    """SQuAD token F1 between the normalised prediction and the best gold answer."""
    tokens = normalize_answer(prediction or "").split()
    if not tokens:
        return 0.0
    return max((_token_f1(tokens, normalize_answer(gold).split()) for gold in _golds(answers)), default=0.0)


def rouge_l(prediction: str | None, answers: Sequence[str]) -> float:
    """ROUGE-L F-measure (``rouge-score``, Porter stemmer), the best over the references."""
    if not prediction or not normalize_answer(prediction):
        return 0.0
    return max((_rouge_l_one(prediction, gold) for gold in _golds(answers)), default=0.0)


def label_prediction(prediction: str, task: str) -> str:
    """Reduce a yes/no or fact-checking prediction to its label; other tasks unchanged.

    Returns:
        ``"Yes"``/``"No"`` (``yesno``), ``"SUPPORTS"``/``"REFUTES"``/``"NOT ENOUGH INFO"``
        (``fact``), or ``prediction`` itself when it states no label.
    """
    if task not in ("yesno", "fact") or not prediction.strip():
        return prediction
    label = extract_final_answer(prediction, task)
    if task == "yesno":
        return label if label in ("Yes", "No") else prediction
    if label in ("SUPPORTS", "REFUTES"):
        return label
    return "NOT ENOUGH INFO" if _NOT_ENOUGH_INFO.search(prediction) else prediction


def score(
    prediction: str | None, answers: Sequence[str] | Mapping[str, Any], task: str | None = None
) -> dict[str, float]:
    """All the metrics that apply to ``task``.

    Args:
        prediction: The method's answer (``None`` counts as empty).
        answers: The gold answers, or an :class:`~searchain_graph.evaluation.datasets.Example`
            (its ``answers``, and its ``task`` when ``task`` is not given).
        task: ``multihop``, ``yesno``, ``fact`` or ``longform``; default: the example's
            task, or ``multihop`` for a plain list of answers.

    Returns:
        ``{"cover_em", "em", "f1"}``, plus ``"rouge_l"`` for ``longform``.

    Raises:
        ValueError: unknown ``task``.
    """
    if isinstance(answers, Mapping):
        golds: Sequence[str] = answers["answers"]
        task = task or str(answers.get("task") or "multihop")
    else:
        golds = answers
        task = task or "multihop"
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    pred = label_prediction(prediction or "", task)
    out = {"cover_em": cover_em(pred, golds), "em": exact_match(pred, golds), "f1": f1(pred, golds)}
    if task == "longform":
        out["rouge_l"] = rouge_l(pred, golds)
    return out
