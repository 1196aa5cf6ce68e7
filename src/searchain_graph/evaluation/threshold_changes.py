"""Which recorded SearChain pairs a new θ would decide otherwise: what to run again when θ moves.

θ enters SearChain at one place, the verdict's test ``f > θ``
(:func:`~searchain_graph.method.verdict.ir_verdict`). A record keeps every IR check it made, with
the action taken, the reader's *f* and the θ it was decided at (in its tree; a record written
without the dataset's text keeps them as ``checks``, numbers and actions only). So a check
decides the same at another θ unless its *f* lies between the two:

* a ``correction`` (its *f* > the old θ) whose *f* ≤ the new θ would now pass;
* a ``pass`` decided at *f* ≤ the old θ whose *f* > the new θ may now be corrected.

Completions, duplicates and checks without a passage do not depend on θ. A record none of whose
checks is of the two kinds gives the same answer at the new θ (the LLM's calls are the same), so
only the others need to run again: ``searchain eval --rerun-threshold``. A SearChain record that
keeps no checks (one written without text before they were kept) cannot tell, and runs again.
"""

from __future__ import annotations

from typing import Any

from searchain_graph.evaluation.comparisons import branches
from searchain_graph.evaluation.methods import METHODS, SEARCHAIN

__all__ = ["check_scores", "decided_otherwise", "recorded_checks", "stale_at"]


def recorded_checks(record: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Every IR check of a record, in every round; ``None`` when the record keeps none to read."""
    if isinstance(record.get("tree"), dict):
        return [c for branch in branches(record) for c in branch.get("checks") or []]
    checks = record.get("checks")
    return list(checks) if isinstance(checks, list) else None


def check_scores(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A record's checks without their text: the action, *f* and θ of each (kept by records without text)."""
    return [
        {"action": c.get("action"), "confidence": c.get("confidence"), "threshold": c.get("threshold")}
        for c in recorded_checks(record) or []
    ]


def decided_otherwise(check: dict[str, Any], theta: float) -> bool:
    """Whether θ = ``theta`` could decide ``check`` otherwise than the θ it was decided at."""
    f, old, action = check.get("confidence"), check.get("threshold"), check.get("action")
    if not isinstance(f, int | float) or isinstance(f, bool):
        return False
    if action == "correction":
        return not f > theta
    if action == "pass":
        return isinstance(old, int | float) and not f > old and f > theta
    return False


def stale_at(record: dict[str, Any], theta: float) -> bool:
    """Whether a record of a SearChain graph might answer otherwise at θ = ``theta`` (see the module)."""
    spec = METHODS.get(str(record.get("method")))
    if spec is None or spec.builder != SEARCHAIN:
        return False
    checks = recorded_checks(record)
    if checks is None:
        return True
    return any(decided_otherwise(c, theta) for c in checks)
