"""The Tree-of-Reasoning of a SearChain run as plain data, ready to draw (the paper's Figure 1).

:func:`tree_view` reads a run's output (or the partial state of a run still going: any key may
be missing) and returns, per round, the branch the LLM wrote with each node's verdict from IR,
exactly as the graph recorded it (``Branch.checks``: one record per node, duplicates and the
nodes not reached included; nothing is worked out again here);
the feedback edges (the node IR corrected or completed, and the branch it started); the path *R*
with its passages; and the final content split into text and ``[n]`` citations. The HTML and
Markdown renderers (:mod:`.html`, :mod:`.markdown`) only format this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from searchain_graph.method.verdict import passage_summary

__all__ = ["VERDICTS", "citation_segments", "compact_run", "fmt_number", "tree_view"]

VERDICTS: dict[str, str] = {
    "pass": "pass",
    "correction": "corrected",
    "completion": "completed",
    "no_passage": "no passage",
    "unsolved_kept": "unsolved",
    "duplicate": "duplicate",
    "not_reached": "not reached",
    "pending": "pending",
}
"""Each verdict a node can show, by its key: IR's actions, ``duplicate`` (asked before: Algorithm
1's *M*, or an earlier node of the chain), ``not_reached`` (IR stopped at an earlier node of the
round), all recorded by the graph, and ``pending`` (the run has not checked this round yet)."""


def fmt_number(value: Any) -> str:
    """*f*, θ or ROUGE-L as shown in a tree: two decimals, ``–`` when missing."""
    return f"{float(value):.2f}" if isinstance(value, (int, float)) else "–"


_CITATION = re.compile(r"\[(\d+)\]")


def citation_segments(text: str, n_references: int) -> list[str | int]:
    """``text`` cut into plain strings and the citation numbers that point at a reference.

    A ``[n]`` outside ``1..n_references`` stays text.
    """
    out: list[str | int] = []
    last = 0
    for match in _CITATION.finditer(text):
        number = int(match.group(1))
        if not 1 <= number <= n_references:
            continue
        if match.start() > last:
            out.append(text[last : match.start()])
        out.append(number)
        last = match.end()
    if last < len(text):
        out.append(text[last:])
    return out


def _passage(source: Mapping[str, Any] | None) -> dict[str, str] | None:
    """Title, id and text of a check record's passage or a reference's document."""
    if not source:
        return None
    if "page_content" in source:  # a reference's document dict
        meta = source.get("metadata") or {}
        return {
            "title": str(meta.get("title") or ""),
            "id": str(meta.get("id") or ""),
            "snippet": str(source.get("page_content") or ""),
        }
    return {key: str(source.get(key) or "") for key in ("title", "id", "snippet")}


def _node_view(node: Mapping[str, Any], check: Mapping[str, Any] | None, verdict: str) -> dict[str, Any]:
    view: dict[str, Any] = {
        "index": int(node.get("index") or 0),
        "query": str(node.get("query") or ""),
        "answer": node.get("answer"),
        "unsolved": bool(node.get("unsolved")),
        "verdict": verdict,
        "label": VERDICTS[verdict],
        "g": None,
        "f": None,
        "threshold": None,
        "passage": None,
        "unverifiable": False,
        "rouge_l": None,
        "reason": None,
        "duplicate_of": None,
        "started_round": None,
    }
    if check is not None:
        view.update(
            g=check.get("reader_answer"),
            f=check.get("confidence"),
            threshold=check.get("threshold"),
            passage=_passage(check.get("passage")),
            unverifiable=bool(check.get("unverifiable")),
            rouge_l=check.get("rouge_l"),
            reason=check.get("reason"),
            duplicate_of=dict(check["duplicate_of"]) if check.get("duplicate_of") else None,
        )
    return view


def tree_view(output: Mapping[str, Any]) -> dict[str, Any]:
    """The run's tree as plain data: see the module docstring.

    Args:
        output: A SearChain graph's output, or its state part way through a run (from
            ``stream_mode="values"``, or updates merged by the caller).

    Returns:
        ``{"question", "answer", "final_content", "done", "rounds", "warnings", "branches",
        "references", "final_segments"}``; each branch is ``{"round", "depth", "parent", "nodes",
        "final_content"}`` (``depth``: how many feedback edges lead to it from the root) and
        each node carries ``verdict`` (a key of :data:`VERDICTS`), ``label``, *g*, *f*, θ, the
        passage read, the graph's ``reason``, ``duplicate_of`` (``{"round", "node", "query"}``
        for a duplicate) and ``started_round`` (the round its feedback started, if any).
    """
    done = bool(output.get("final_content") or output.get("answer"))
    branches_in: Sequence[Mapping[str, Any]] = output.get("tree") or []
    started = {}
    for branch in branches_in:
        parent = branch.get("parent")
        if parent:
            started[(parent.get("round"), parent.get("node"))] = branch.get("round")
    depth: dict[int, int] = {}
    branches = []
    for branch in sorted(branches_in, key=lambda b: int(b.get("round") or 0)):
        checks = {int(c.get("node") or 0): c for c in branch.get("checks") or []}
        has_checks = bool(checks)
        nodes = []
        for node in branch.get("nodes") or []:
            check = checks.get(int(node.get("index") or 0))
            if check is not None:
                verdict = str(check.get("action") or "pass")
                verdict = verdict if verdict in VERDICTS else "pass"
            elif has_checks or done:
                verdict = "not_reached"
            else:
                verdict = "pending"
            view = _node_view(node, check, verdict)
            view["started_round"] = started.get((branch.get("round"), view["index"]))
            nodes.append(view)
        rnd, parent = int(branch.get("round") or 0), branch.get("parent")
        depth[rnd] = depth.get(int(parent.get("round") or 0), 0) + 1 if parent else 0
        branches.append(
            {
                "round": rnd,
                "depth": depth[rnd],
                "parent": dict(branch["parent"]) if branch.get("parent") else None,
                "nodes": nodes,
                "final_content": branch.get("final_content"),
            }
        )
    references = [
        {
            "index": int(ref.get("index") or i + 1),
            "query": str(ref.get("query") or ""),
            "answer": str(ref.get("answer") or ""),
            "source": str(ref.get("source") or "llm"),
            "round": ref.get("round"),
            "confidence": ref.get("confidence"),
            "passage": _passage(ref.get("document")),
        }
        for i, ref in enumerate(output.get("references") or [])
    ]
    final_content = str(output.get("final_content") or "")
    return {
        "question": str(output.get("question") or ""),
        "answer": str(output.get("answer") or ""),
        "final_content": final_content,
        "done": done,
        "rounds": int(output.get("rounds") or len(branches)),
        "warnings": [str(w) for w in output.get("warnings") or []],
        "branches": branches,
        "references": references,
        "final_segments": citation_segments(final_content, len(references)),
    }


def compact_run(output: Mapping[str, Any], *, snippet_chars: int = 300) -> dict[str, Any]:
    """What :func:`tree_view` needs of a run, small enough to keep in every evaluation record.

    The tree's branches and the path *R*, each reference's passage cut to ``snippet_chars``;
    plain data (JSON- and msgpack-serialisable).
    """
    references = []
    for ref in output.get("references") or []:
        doc = ref.get("document")
        slim = dict(ref)
        if doc:
            summary = passage_summary(doc, snippet_chars)
            slim["document"] = {
                "page_content": summary["snippet"],
                "metadata": {"title": summary["title"], "id": summary["id"]},
            }
        references.append(slim)
    tree = [{k: v for k, v in branch.items() if k != "raw"} for branch in output.get("tree") or []]
    return {"tree": tree, "references": references, "warnings": list(output.get("warnings") or [])}
