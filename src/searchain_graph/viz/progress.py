"""A run's progress as one line per step, from the graph's ``stream_mode="updates"`` chunks.

``searchain ask`` prints these lines on stderr; ``searchain serve`` shows them above the tree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["progress_line"]


def progress_line(update: Mapping[str, Any], state: Mapping[str, Any] | None = None) -> str | None:
    """What one ``updates`` chunk (``{node: delta}``) did, or ``None`` for a step not worth a line.

    Args:
        update: The chunk.
        state: The run's state before the step (the last ``values`` chunk): the feedback step's
            line names the feedback that the IR check recorded there.

    Example:
        ``round 1: CoQ with 3 nodes (0 unsolved)``, ``  IR: node 1 pass (f=1.30), node 2 correction
        (f=2.96)``, ``  feedback: correction of 'Where was Kevin Drew born?' -> 'Toronto, Ontario'``.
    """
    for node, delta in update.items():
        if not isinstance(delta, Mapping):
            continue
        if node == "coq_generation" and delta.get("chain") is not None:
            chain = delta["chain"]
            unsolved = sum(1 for n in chain if n["unsolved"])
            return f"round {delta['rounds']}: CoQ with {len(chain)} nodes ({unsolved} unsolved)"
        if node == "ir_check":
            checks = (delta.get("tree") or [{}])[-1].get("checks", [])
            parts = [
                f"node {c['node']} {c['action']}"
                + (f" (f={c['confidence']:.2f})" if isinstance(c.get("confidence"), float) else "")
                for c in checks
            ]
            return "  IR: " + (", ".join(parts) if parts else "nothing new to check")
        if node == "feedback" and state is not None and state.get("feedback"):
            fb = state["feedback"]
            return f"  feedback: {fb['kind']} of {fb['query']!r} -> {fb['answer']!r}"
        if node == "tracing":
            return "tracing: writing the final content"
    return None
