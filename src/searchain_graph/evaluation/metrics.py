r"""Answer metrics: cover-EM (the paper's), EM and F1 as the official scripts compute them, and ROUGE-L.

Every metric compares one prediction with a list of gold answers (the answer and its
aliases, or ELI5's reference answers) and returns the best score over them, a float in
[0, 1] (the maximum over the golds, as ``metric_max_over_ground_truths`` in both official
scripts below). A single string passed as ``answers`` is taken as one answer, not as a list
of characters; ``None`` as the prediction counts as ``""``.

**EM and F1 follow the official scripts exactly** (checked against re-implementations of
them in ``tests/unit_tests/test_metrics_official.py``):

* :func:`normalize_answer` is ``normalize_answer`` of SQuAD v1.1's ``evaluate-v1.1.py``
  (Rajpurkar et al., 2016, *SQuAD: 100,000+ Questions for Machine Comprehension of Text*),
  which HotpotQA's ``hotpot_evaluate_v1.py`` (Yang et al., 2018, *HotpotQA: A Dataset for
  Diverse, Explainable Multi-hop Question Answering*) repeats: lower case (``str.lower``),
  delete the ASCII punctuation of ``string.punctuation`` (deleted, not replaced:
  ``"Mountbatten-Windsor"`` → ``mountbattenwindsor``, ``"3,384,569"`` → ``3384569``,
  ``"U.S."`` → ``us``), replace the articles ``\b(a|an|the)\b`` by a space, collapse
  whitespace. Nothing else: no Unicode normalisation, and Unicode punctuation
  (``“ ” … — «``) is kept, so ``“Toronto”`` is not ``toronto``.
* :func:`exact_match`: 1.0 when the normalised prediction equals a normalised gold answer
  (``exact_match_score`` of both scripts). An empty prediction therefore matches a gold
  answer that normalises to ``""`` (``"The."`` vs ``"the"``), as in the scripts.
* :func:`f1`: token F1 over the normalised whitespace tokens, repeated tokens counted with
  multiplicity (``collections.Counter`` intersection): with ``c`` its size,
  ``P = c / len(prediction tokens)``, ``R = c / len(gold tokens)``, ``F1 = 2PR / (P + R)``,
  and 0 when ``c = 0``. By default it is HotpotQA's ``f1_score``, which adds one rule to
  SQuAD's: when the normalised prediction or the normalised gold is ``yes``, ``no`` or
  ``noanswer`` and the two differ, F1 is 0 (so ``"yes it is"`` scores 0 against ``yes``,
  not 0.5). IRCoT (Trivedi et al., 2023) and FlashRAG (Jin et al., 2024) score with this
  one. ``f1(..., yes_no_rule=False)`` is SQuAD's ``f1_score``.

Where this module departs from the scripts, it is only where they have no answer: an empty
list of gold answers scores 0 (the scripts' ``max`` of an empty list raises), and gold
answers that are not strings are ignored.

**cover-EM and ROUGE-L are not defined by those scripts** and keep their own text handling:

* :func:`cover_em`: 1.0 when some gold answer is contained in the prediction ("whether the
  gold answer is contained in the prediction", the SearChain paper's main metric, after
  Self-Ask and DSP), tested on token boundaries by
  :func:`searchain_graph.method.parsing.answer_contains` (``"toronto"`` covers
  ``"born in toronto ontario"`` but not ``"torontonian"``). It uses that module's extended
  normalisation (:func:`searchain_graph.method.parsing.normalize_answer`: NFKC, lower case,
  ASCII *and Unicode* punctuation *replaced by spaces*, articles removed, whitespace
  collapsed), the same one SearChain's own consistency check uses, so the metric and the
  method agree on what "contained" means. Containment needs it: deleting punctuation would
  glue tokens together (``"Mountbatten-Windsor"`` would no longer contain ``Windsor``, nor
  ``"“Toronto”,"`` contain ``Toronto``). An empty prediction, or one that normalises to
  nothing, scores 0; a gold answer that normalises to ``""`` is skipped (an empty span
  would be contained everywhere).
* :func:`rouge_l`: ROUGE-L F-measure of ``rouge-score`` with the Porter stemmer, the same
  scorer the graph uses to check long-form answers against passages. It uses its own
  tokenizer (lower case, runs of ``[a-z0-9]``), so non-ASCII letters are dropped: a text
  with only such letters scores 0. Empty predictions and golds are treated as for cover-EM.

:func:`score` computes all the metrics that apply to a task, keyed ``cover_em``, ``em``,
``f1`` and, for ``longform``, ``rouge_l``. For ``yesno`` and ``fact`` the prediction is
first reduced to its label with :func:`searchain_graph.method.parsing.extract_final_answer`
("Yes, frost is common." → ``Yes``; "... So the final answer is REFUTES." → ``REFUTES``);
for ``fact``, a prediction that names neither SUPPORTS nor REFUTES but says "not enough
info(rmation)" becomes ``NOT ENOUGH INFO``. A prediction without a label is scored as it is.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from searchain_graph.method.parsing import answer_contains, extract_final_answer
from searchain_graph.method.parsing import normalize_answer as _normalize_extended
from searchain_graph.method.verdict import rouge_l as _rouge_l_one

TASKS = ("multihop", "yesno", "fact", "longform")
"""The task names :func:`score` accepts (the graph's)."""

_NOT_ENOUGH_INFO = re.compile(r"\bnot\s+enough\s+info(?:rmation)?\b", re.IGNORECASE)
_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_YES_NO_NOANSWER = frozenset({"yes", "no", "noanswer"})


def normalize_answer(text: str) -> str:
    """SQuAD v1.1's (and HotpotQA's) answer normalisation, exactly.

    Lower case, ASCII punctuation (``string.punctuation``) deleted, the articles *a*, *an*,
    *the* replaced by a space, whitespace collapsed. Unlike
    :func:`searchain_graph.method.parsing.normalize_answer` (cover-EM's), it neither applies
    NFKC nor touches Unicode punctuation, and it deletes punctuation instead of splitting on it.
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _as_list(answers: Sequence[str] | str) -> list[str]:
    """The gold answers that are strings (a bare string is one answer)."""
    items = [answers] if isinstance(answers, str) else list(answers)
    return [a for a in items if isinstance(a, str)]


def _golds(answers: Sequence[str] | str) -> list[str]:
    """The gold answers that normalise to something under cover-EM's normalisation."""
    return [a for a in _as_list(answers) if _normalize_extended(a)]


def cover_em(prediction: str | None, answers: Sequence[str]) -> float:
    """1.0 if a gold answer occurs, token-aligned, in the prediction (extended normalisation); else 0.0."""
    if not prediction or not _normalize_extended(prediction):
        return 0.0
    return float(any(answer_contains(prediction, gold) for gold in _golds(answers)))


def exact_match(prediction: str | None, answers: Sequence[str]) -> float:
    """Official exact match (SQuAD v1.1 and HotpotQA): the normalised strings are equal, best over the golds."""
    pred = normalize_answer(prediction or "")
    return max((float(pred == normalize_answer(gold)) for gold in _as_list(answers)), default=0.0)


def _token_f1(prediction: str, gold: str, yes_no_rule: bool) -> float:
    """F1 of two normalised strings: HotpotQA's ``f1_score``, or SQuAD's without ``yes_no_rule``."""
    if yes_no_rule and prediction != gold and (prediction in _YES_NO_NOANSWER or gold in _YES_NO_NOANSWER):
        return 0.0
    pred_tokens, gold_tokens = prediction.split(), gold.split()
    num_same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if num_same == 0:
        return 0.0
    precision = 1.0 * num_same / len(pred_tokens)
    recall = 1.0 * num_same / len(gold_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1(prediction: str | None, answers: Sequence[str], *, yes_no_rule: bool = True) -> float:
    """Official token F1, best over the golds: HotpotQA's (default) or, without ``yes_no_rule``, SQuAD v1.1's."""
    pred = normalize_answer(prediction or "")
    return max((_token_f1(pred, normalize_answer(gold), yes_no_rule) for gold in _as_list(answers)), default=0.0)


def rouge_l(prediction: str | None, answers: Sequence[str]) -> float:
    """ROUGE-L F-measure (``rouge-score``, Porter stemmer), the best over the references."""
    if not prediction or not _normalize_extended(prediction):
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
