"""The Tree-of-Reasoning as Markdown: for notebooks and the evaluation report.

One table per round (a branch), each node with its query, the LLM's answer, the passage read,
*g*, *f* against θ and the verdict; the feedback edge named on the branch it started; the final
content with its ``[n]`` linked to the path's passages (HTML anchors, which GitHub and Jupyter
render). Text from the run is escaped for Markdown tables and HTML.
"""

from __future__ import annotations

from html import escape
from typing import Any

from searchain_graph.viz.tree import fmt_number

__all__ = ["markdown"]


def _cell(value: Any, limit: int = 160) -> str:
    text = " ".join(("" if value is None else str(value)).split())
    if len(text) > limit:
        text = text[:limit] + "…"
    return escape(text, quote=False).replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def _node_row(node: dict[str, Any]) -> str:
    answer = "*[Unsolved Query]*" if node["unsolved"] else _cell(node["answer"], 80)
    passage = node["passage"]
    read = f"**{_cell(passage['title'], 60)}**: {_cell(passage['snippet'], 120)}" if passage else ""
    f, theta = node["f"], node["threshold"]
    confidence = fmt_number(f)
    if isinstance(f, (int, float)) and isinstance(theta, (int, float)):
        confidence += f" {'>' if f > theta else '≤'} θ {fmt_number(theta)}"
    verdict = f"**{node['label']}**"
    if node["unverifiable"]:
        verdict += " (yes/no, not verified)"
    if node["started_round"] is not None:
        verdict += f" → round {node['started_round']}"
    was = node["duplicate_of"]
    if was and was.get("round") is not None:
        verdict += f" of round {was['round']}, node {was['node']}"
    g = _cell(node["g"], 60) if node["g"] is not None else ""
    return f"| {node['index']} | {_cell(node['query'], 120)} | {answer} | {read} | {g} | {confidence} | {verdict} |"


def markdown(view: dict[str, Any]) -> str:
    """The tree of :func:`~searchain_graph.viz.tree.tree_view` as Markdown."""
    lines = [f"### {_cell(view['question'], 300)}", ""]
    if view["done"]:
        lines += [f"**Answer:** {_cell(view['answer'], 300)}", ""]
    else:
        lines += ["*running…*", ""]
    if view["warnings"]:
        lines += ["> **Warnings**"] + [f"> - {_cell(w, 300)}" for w in view["warnings"]] + [""]
    for branch in view["branches"]:
        parent = branch["parent"]
        origin = (
            f"from round {parent.get('round')}, node {parent.get('node')} ({parent.get('kind')})"
            if parent
            else "root: the question"
        )
        lines += [f"**Round {branch['round']}** · {origin}", ""]
        if branch["nodes"]:
            lines += ["| # | query | LLM answer | passage | *g* | *f* | verdict |", "|---:|---|---|---|---|---|---|"]
            lines += [_node_row(node) for node in branch["nodes"]]
        else:
            lines.append("*no query parsed*")
        lines.append("")
    if view["final_content"]:
        text = "".join(
            f"[[{s}]](#ref-{s})" if isinstance(s, int) else escape(s, quote=False) for s in view["final_segments"]
        )
        lines += ["**Final content**", "", text, ""]
        for ref in view["references"]:
            passage = ref["passage"]
            read = f" · {_cell(passage['title'], 60)}: {_cell(passage['snippet'], 200)}" if passage else ""
            lines.append(
                f'{ref["index"]}. <a id="ref-{ref["index"]}"></a>{_cell(ref["query"], 120)} → '
                f"{_cell(ref['answer'], 80)} ({ref['source']}, round {ref['round']}){read}"
            )
        lines.append("")
    return "\n".join(lines)
