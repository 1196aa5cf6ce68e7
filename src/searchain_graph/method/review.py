"""A person in the loop, and the verdict stream: what IR's check shows outside the graph.

* :func:`emit_verdict` sends one ``stream_mode="custom"`` event per verdict, so a client follows
  the tree node by node.
* With ``create_searchain_graph(..., review=True)``, each correction pauses the run until a
  person accepts it, rejects it or edits the answer. ``ir_check`` stops at the correction and
  writes what the person will see (:func:`review_payload`) into the state; the ``review`` node
  (:func:`ask_for_review`) pauses there with ``interrupt()``; the decision goes into the state and
  ``ir_check`` runs again from its stored results, so a decision applies to the passage and the
  reading the person saw, and deciding redoes no retrieval and no reading.

A decision names the correction it answers (``"id"``, or ``"round"`` and ``"node"``):
:func:`review_decision` refuses one that names another (:class:`StaleDecisionError`), so a
retried decision never lands on a correction nobody saw. A decision that is not one is refused
before the graph records it (:meth:`~searchain_graph.method.threads.SearChainGraph.stream`
checks ``Command(resume=...)``), and should one reach the node anyway (a parent graph resuming),
the node asks again, the refusal in the payload, so the correction stays answerable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.types import interrupt

from searchain_graph.method.state import ChainNode, Check, SearChainState
from searchain_graph.method.verdict import IRResult

__all__ = [
    "MAX_REVIEW_ANSWER_CHARS",
    "REVIEW_DECISIONS",
    "ReviewDecision",
    "StaleDecisionError",
    "ask_for_review",
    "check_review_resume",
    "emit_verdict",
    "review_decision",
    "review_id",
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


def review_id(rnd: object, node: object) -> str:
    """The id of the correction of round ``rnd``, node ``node``: ``round-R-node-N``."""
    return f"round-{rnd}-node-{node}"


def review_payload(
    node: ChainNode, result: IRResult, verdict: dict[str, Any], theta: float, rnd: int
) -> dict[str, Any]:
    """What a reviewer sees before IR overrules the LLM: the node, both answers, f against θ, the passage.

    ``id`` (``round-R-node-N``) is what a decision names.
    """
    doc = result.get("document") or {}
    meta = doc.get("metadata") or {}
    return {
        "id": review_id(rnd, node["index"]),
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

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> ReviewDecision:
        """The decision :meth:`record` kept."""
        return cls(str(record["decision"]), record.get("answer"))


class StaleDecisionError(ValueError):
    """A decision that names a correction other than the one the run waits on (or none waits)."""


MAX_REVIEW_ANSWER_CHARS = 2000
"""An edited answer longer than this is refused (it goes to the LLM)."""


def named_review(value: Any) -> str | None:
    """The review id a decision names (``"id"``, or ``"round"`` and ``"node"``), or None."""
    if not isinstance(value, dict):
        return None
    if value.get("id") is not None:
        return str(value["id"])[:80]
    if value.get("round") is not None or value.get("node") is not None:
        return review_id(value.get("round"), value.get("node"))
    return None


def review_decision(value: Any, pending: dict[str, Any] | None = None) -> ReviewDecision:
    """Read the value a run was resumed with (``Command(resume=...)``) as a :class:`ReviewDecision`.

    Takes ``"accept"`` or ``"reject"``, or a mapping ``{"decision": ..., "answer": ...}`` (``answer``
    required for ``"edit"``, a non-empty string of at most :data:`MAX_REVIEW_ANSWER_CHARS`). The
    mapping may name the correction it answers, ``"id"`` (the payload's) or ``"round"`` and
    ``"node"``; given the ``pending`` payload, a decision naming another is refused.

    Raises:
        StaleDecisionError: the decision names a correction other than ``pending``.
        ValueError: anything else that is not a decision, naming what is wrong.
    """
    named = named_review(value)
    if pending is not None and named is not None:
        waiting = str(pending.get("id") or review_id(pending.get("round"), pending.get("node")))
        if named != waiting:
            raise StaleDecisionError(f"the decision answers {named}, but the run waits for a decision on {waiting}")
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


def ask_for_review(state: SearChainState) -> dict[str, Any]:
    """The ``review`` node: pause on the correction ``ir_check`` stopped at, and keep the decision.

    ``interrupt()`` returns the value the run is resumed with. One that is not a decision for
    this correction is not taken: the node asks again (the refusal in the payload's
    ``refused``), so the correction stays answerable.
    """
    pending = state.get("review_pending")
    if not pending:  # unreachable through the graph's own edges
        return {}
    ask = pending
    while True:
        value = interrupt(ask)
        try:
            decision = review_decision(value, pending)
        except ValueError as exc:
            ask = {**pending, "refused": str(exc)}
            continue
        kept = {**decision.record(), "round": pending.get("round"), "node": pending.get("node")}
        return {"review_pending": None, "reviews": {str(pending["id"]): kept}}


_DECISION_KEYS = frozenset({"decision", "answer", "id", "round", "node"})


def check_review_resume(resume: Any, values: Mapping[str, Any]) -> None:
    """Refuse a ``Command(resume=...)`` that is not a decision on the correction the run waits on.

    ``values`` is the thread's state. ``resume`` is a decision, or LangGraph's mapping of
    interrupt ids to values (each then checked).

    Raises:
        StaleDecisionError: no correction waits, or the decision names another.
        ValueError: the value is not a decision (:func:`review_decision` says why).
    """
    pending = values.get("review_pending")
    if not pending:
        raise StaleDecisionError("the run is not waiting for a review decision")
    if isinstance(resume, dict) and resume and not (set(resume) & _DECISION_KEYS):
        for value in resume.values():  # {interrupt_id: decision}
            review_decision(value, pending)
        return
    review_decision(resume, pending)
