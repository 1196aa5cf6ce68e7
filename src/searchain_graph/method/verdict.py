"""Algorithm 1's ``IR(q_i, a_i)``: the decision IR takes on one node (Section 3.3).

* **Completion**: an ``[Unsolved Query]`` always gets the reader's *g* and the passage back.
* **Verification**: when the reader is confident (``f > θ``) and *g* is not in the LLM's answer
  (long form: ROUGE-L of answer and passage < α), the LLM is told to correct the node.
* **DuplicateQuery**: a query already processed in an earlier round (the set *M*) is not
  checked again.
* **Yes/no answers** ("Yes", "No, it is not") are not verified by a reader that extracts spans
  (``answers_yes_no = False``, as every extractive reader here): its *g* is a span of the
  passage, which never contains "yes" or "no", so every confident read would overrule the LLM
  whatever the passage says. The node passes with ``unverifiable`` set in its record.
  ``Context(verify_yes_no=True)`` (and the paper's preset) verifies them anyway.
* **A g that cannot be the answer** does not overrule it (:mod:`~searchain_graph.method.adaptations.answer_checks`):
  a date or number for a query that asks for a place or a person, and the answer's own words
  spelled about one letter differently ("Puttana Kanagal" / "Puttanna Kanagal"); with
  ``stated_answers``, an answer the question itself states.

The graph (:mod:`searchain_graph.method.nodes`) and the oracle-chain benchmark
(:mod:`searchain_graph.evaluation.oracle`) share this one decision function.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.documents import Document

from searchain_graph.ir.corpus import passage_text
from searchain_graph.ir.readers.base import usable_confidence
from searchain_graph.method.adaptations.answer_checks import mistyped, spelled_alike, stated_in_question
from searchain_graph.method.context import DEFAULT_THRESHOLD, Context, required
from searchain_graph.method.parsing import answer_contains, normalize_answer
from searchain_graph.method.state import ChainNode, Check, Feedback, Reference

__all__ = [
    "DEFAULT_THRESHOLD",
    "IRResult",
    "QueryMatcher",
    "SNIPPET_CHARS",
    "check_record",
    "duplicate_rule",
    "feedback_for",
    "ir_verdict",
    "is_yes_no",
    "normalized_duplicate",
    "passage_summary",
    "path_entry",
    "rouge_l",
]

IRResult = dict[str, Any]
"""What IR found for one query: ``document`` (a dict or ``None``), the reader's ``answer`` *g* and
``confidence`` *f* (``None`` without a passage)."""

QueryMatcher = Callable[[str, Sequence[str]], bool]
"""``is_duplicate(query, processed) -> bool``: the ``DuplicateQuery`` test of Algorithm 1."""

_YES_NO = re.compile(r"^\W*(yes|no)\W*(?:[,.;:!?]|$)", re.IGNORECASE)


def is_yes_no(answer: str | None) -> bool:
    """Whether an answer is a bare yes or no, or starts with one and a punctuation mark.

    ``"Yes"``, ``"no."`` and ``"No, it is not"`` are; ``"No Country for Old Men"`` is not.
    """
    return bool(answer) and _YES_NO.match(answer or "") is not None


@functools.cache
def _rouge_scorer() -> Any:
    # rouge-score takes about two seconds to import (absl, nltk): only long-form tasks need it.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


def ir_verdict(node: ChainNode, result: IRResult, settings: Context, question: str = "") -> dict[str, Any]:
    """Algorithm 1's ``IR(q_i, a_i)``: pass, correction or completion for one node.

    Args:
        node: The CoQ node (``query``, ``answer``, ``unsolved``).
        result: What IR found: ``document`` (a dict, or ``None``), the reader's ``answer`` *g*
            and ``confidence`` *f*.
        settings: The run's settings: ``completion``, ``verification``, θ
            (``confidence_threshold``), α (``rouge_threshold``), ``task``, ``verify_yes_no``,
            ``answer_checks`` and ``stated_answers``.
        question: The run's question, read by ``stated_answers`` only.

    Returns:
        ``{"action": ..., "reason": ...}``: ``"completion"`` for an unsolved query (whatever
        *f*); ``"correction"`` when ``f > θ`` and *g* is not in the LLM's answer (nor spelled
        alike there, nor of the wrong kind for the query; long form: ROUGE-L of answer and
        passage < α); ``"pass"`` otherwise (with ``"unverifiable": True``
        for a yes/no answer left unchecked, see the module docstring); ``"no_passage"`` or
        ``"unsolved_kept"`` when there is nothing to do. ``reason`` says why, in a few words.
    """
    doc, g, f = result["document"], result["answer"] or "", usable_confidence(result["confidence"])
    if doc is None:
        return {"action": "no_passage", "reason": "the retriever returned no passage"}
    if node["unsolved"]:
        if settings.completion:
            return {"action": "completion", "reason": "an unsolved query is always completed"}
        return {"action": "unsolved_kept", "reason": "completion is off"}
    if not settings.verification:
        return {"action": "pass", "reason": "verification is off"}
    if f is None or not f > required(settings.confidence_threshold, "confidence_threshold") or not g:
        why = "the reader found no answer" if f is not None and not g else "f <= θ: the reader is not confident"
        return {"action": "pass", "reason": why}
    if not settings.verify_yes_no and settings.task != "longform" and is_yes_no(node["answer"]):
        return {"action": "pass", "unverifiable": True, "reason": "a yes/no answer this reader cannot check"}
    if settings.task == "longform":
        score = rouge_l(node["answer"] or "", doc["page_content"])
        if score >= settings.rouge_threshold:
            return {"action": "pass", "rouge_l": score, "reason": "ROUGE-L(answer, passage) >= α"}
        return {"action": "correction", "rouge_l": score, "reason": "f > θ and ROUGE-L(answer, passage) < α"}
    if answer_contains(node["answer"], g):
        return {"action": "pass", "reason": "f > θ and g is in the answer"}
    if settings.answer_checks and spelled_alike(node["answer"] or "", g):
        return {"action": "pass", "reason": "f > θ and g is in the answer, spelled another way"}
    wrong_kind = mistyped(node["query"], g) if settings.answer_checks else None
    if wrong_kind:
        return {"action": "pass", "reason": f"f > θ but {wrong_kind}"}
    if settings.stated_answers and stated_in_question(question, node["answer"] or "", g):
        return {"action": "pass", "reason": "f > θ but the question itself states the answer"}
    return {"action": "correction", "reason": "f > θ and g is not in the answer"}


def normalized_duplicate(query: str, processed: Sequence[str]) -> bool:
    """``DuplicateQuery`` by text (the paper's preset): the query equals a processed one after SQuAD normalisation."""
    norm = normalize_answer(query)
    return any(norm == normalize_answer(p) for p in processed)


def duplicate_rule(rule: QueryMatcher | str | None) -> QueryMatcher:
    """``DuplicateQuery`` from a matcher, or a built-in rule's name (``Context.duplicates``: ``"text"``, ``"meaning"``).

    ``"meaning"`` is :mod:`~searchain_graph.method.adaptations.same_meaning`'s shared encoder,
    loaded on first use.

    Raises:
        ValueError: ``rule`` is a string that names no rule.
    """
    if rule is None or rule == "text":
        return normalized_duplicate
    if rule == "meaning":
        from searchain_graph.method.adaptations.same_meaning import shared_semantic_duplicate

        return shared_semantic_duplicate()
    if isinstance(rule, str) or not callable(rule):
        raise ValueError(f"is_duplicate must be a callable, 'text' or 'meaning', got {rule!r}")
    return rule


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure (``rouge-score``, with stemming)."""
    return float(_rouge_scorer().score(reference, prediction)["rougeL"].fmeasure)


SNIPPET_CHARS = 300
"""How much of a passage a check record keeps (the whole passage is on the path, ``references``)."""


def passage_summary(doc: dict[str, Any], chars: int = SNIPPET_CHARS) -> dict[str, str]:
    """A retrieved document (dict form) as ``{"title", "id", "snippet"}``, its text cut to ``chars``."""
    meta = doc.get("metadata") or {}
    text = str(doc.get("page_content") or "")
    return {
        "title": str(meta.get("title") or ""),
        "id": str(meta.get("id") or ""),
        "snippet": text[:chars] + ("…" if len(text) > chars else ""),
    }


def check_record(node: ChainNode, result: IRResult, verdict: dict[str, Any], threshold: float | None = None) -> Check:
    """The record of one verdict kept on its branch of the tree (``Branch.checks``).

    Besides the verdict, *g* and *f*, it keeps θ and the passage read (title, id and the first
    ``SNIPPET_CHARS`` characters), so that the tree can be drawn without the IR cache.
    """
    record: Check = {
        "node": node["index"],
        "query": node["query"],
        "action": verdict["action"],
        "reader_answer": result["answer"],
        "confidence": result["confidence"],
    }
    if threshold is not None:
        record["threshold"] = threshold
    doc = result.get("document")
    if doc is not None:
        record["passage"] = passage_summary(doc)
    for key in ("rouge_l", "unverifiable", "reason"):
        if key in verdict:
            record[key] = verdict[key]
    return record


def path_entry(index: int, node: ChainNode, result: IRResult, action: str, rnd: int) -> Reference:
    """``R.add(q_i, a_i or g, d_i)``: the node on the correct path, with its supporting passage."""
    source = {"completion": "completed", "correction": "corrected"}.get(action, "llm")
    return {
        "index": index,
        "query": node["query"],
        "answer": result["answer"] if source != "llm" else (node["answer"] or ""),
        "source": source,  # type: ignore[typeddict-item]
        "document": result["document"],
        "confidence": result["confidence"],
        "reader_answer": result["answer"],
        "round": rnd,
    }


def feedback_for(action: str, node: ChainNode, result: IRResult) -> Feedback:
    """*F*: what ``PromptForVerify``/``PromptForComplete`` tell the LLM about this node."""
    doc = result["document"]
    return {
        "kind": action,  # type: ignore[typeddict-item]
        "node": node["index"],
        "query": node["query"],
        "answer": result["answer"],
        "passage": passage_text(Document(page_content=doc["page_content"], metadata=doc["metadata"])),
        "confidence": float(result["confidence"]),
    }
