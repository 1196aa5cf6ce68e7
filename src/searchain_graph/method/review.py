"""A person in the loop, and the verdict stream: what IR's check shows outside the graph.

* :func:`emit_verdict` sends one ``stream_mode="custom"`` event per verdict, so a client follows
  the tree node by node.
* With ``create_searchain_graph(..., review=True)``, each correction pauses the run
  (``interrupt(review_payload(...))``) until a person accepts it, rejects it or edits the answer
  (:func:`review_decision` reads the value the run is resumed with; :class:`ReviewDecision`
  applies it to the verdict).
"""

from __future__ import annotations

from typing import Any

from langgraph.config import get_stream_writer

from searchain_graph.method.state import ChainNode, Check
from searchain_graph.method.verdict import IRResult

__all__ = [
    "MAX_REVIEW_ANSWER_CHARS",
    "REVIEW_DECISIONS",
    "ReviewDecision",
    "emit_verdict",
    "review_decision",
    "review_payload",
]


def emit_verdict(rnd: int, check: Check) -> None:
    """One ``stream_mode="custom"`` event per verdict: ``{"searchain": "verdict", "round", **check}``.

    A client follows the tree node by node without state dumps. Outside a graph run (a step
    called directly) there is no stream, and nothing is sent.
    """
    try:
        writer = get_stream_writer()
    except RuntimeError:
        return
    writer({"searchain": "verdict", "round": rnd, **check})


REVIEW_DECISIONS = ("accept", "reject", "edit")
"""What a person may answer to a correction under review."""


def review_payload(
    node: ChainNode, result: IRResult, verdict: dict[str, Any], theta: float, rnd: int
) -> dict[str, Any]:
    """What a reviewer sees before IR overrules the LLM: the node, both answers, f against θ, the passage."""
    doc = result.get("document") or {}
    meta = doc.get("metadata") or {}
    return {
        "kind": "correction",
        "round": rnd,
        "node": node["index"],
        "query": node["query"],
        "llm_answer": node["answer"],
        "g": result["answer"],
        "f": result["confidence"],
        "theta": theta,
        "reason": verdict.get("reason", ""),
        "passage": {"title": str(meta.get("title", "")), "text": str(doc.get("page_content", ""))},
        "decisions": list(REVIEW_DECISIONS),
    }


class ReviewDecision:
    """A person's decision on one correction: ``accept`` it, ``reject`` it, or ``edit`` the answer."""

    def __init__(self, decision: str, answer: str | None = None) -> None:
        self.decision = decision
        self.answer = answer

    def apply(self, verdict: dict[str, Any], result: IRResult) -> tuple[dict[str, Any], IRResult]:
        """The verdict and IR result the traversal goes on with."""
        if self.decision == "reject":
            why = f"a person rejected IR's correction ({verdict.get('reason', '')})".replace(" ()", "")
            return {**verdict, "action": "pass", "reason": why}, result
        if self.decision == "edit":
            return {**verdict, "reason": "a person edited IR's correction"}, {**result, "answer": str(self.answer)}
        return verdict, result

    def record(self) -> dict[str, Any]:
        """The decision as the tree keeps it."""
        return {"decision": self.decision} | ({"answer": self.answer} if self.decision == "edit" else {})


MAX_REVIEW_ANSWER_CHARS = 2000
"""An edited answer longer than this is refused (it goes to the LLM)."""


def review_decision(value: Any) -> ReviewDecision:
    """Read the value a run was resumed with (``Command(resume=...)``) as a :class:`ReviewDecision`.

    Takes ``"accept"`` or ``"reject"``, or a mapping ``{"decision": ..., "answer": ...}`` (``answer``
    required for ``"edit"``, a non-empty string of at most :data:`MAX_REVIEW_ANSWER_CHARS`).

    Raises:
        ValueError: anything else, naming what is wrong.
    """
    if isinstance(value, str):
        value = {"decision": value}
    if not isinstance(value, dict):
        raise ValueError(
            f"a review decision is 'accept', 'reject' or {{'decision': ..., 'answer': ...}}, got {type(value).__name__}"
        )
    decision = value.get("decision")
    if decision not in REVIEW_DECISIONS:
        raise ValueError(f"review decision must be one of {', '.join(REVIEW_DECISIONS)}, got {str(decision)[:80]!r}")
    answer = value.get("answer")
    if decision == "edit":
        if not isinstance(answer, str) or not answer.strip():
            raise ValueError("an 'edit' review decision needs the answer: a non-empty string")
        if len(answer) > MAX_REVIEW_ANSWER_CHARS:
            raise ValueError(f"the edited answer has {len(answer):,} characters; at most {MAX_REVIEW_ANSWER_CHARS:,}")
        return ReviewDecision("edit", answer.strip())
    return ReviewDecision(str(decision))
