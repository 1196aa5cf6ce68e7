"""The Tree-of-Reasoning as a self-contained HTML page: inline CSS, no script, no network.

Every text that comes from the run (question, chains, passages, *g*) is escaped, so a passage
holding ``<script>`` is shown, not run. The markup carries stable hooks for tests and styling:
``section.branch[data-round]``, ``li.node[data-verdict]`` (a key of
:data:`~searchain_graph.viz.tree.VERDICTS`), ``a.edge`` (feedback edges), ``a.cite`` (citations
of the final content) and ``li.reference`` (the path *R*).
"""

from __future__ import annotations

from html import escape
from typing import Any

from searchain_graph.viz.tree import fmt_number

__all__ = ["STYLE", "html_fragment", "html_page"]

STYLE = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;background:#f6f7f9;color:#1d232b}
main{max-width:1100px;margin:0 auto;padding:1.2rem}
h1{font-size:1.25rem;margin:.2rem 0 .8rem} h2{font-size:1.05rem;margin:1.2rem 0 .5rem}
.answer{font-size:1.1rem;background:#fff;border:1px solid #d5dae1;border-radius:8px;padding:.7rem 1rem}
.warnings{background:#fff4e5;border:1px solid #f0c36d;border-radius:8px;padding:.5rem 1rem;margin:.8rem 0}
.branch{background:#fff;border:1px solid #d5dae1;border-radius:8px;margin:.8rem 0;padding:.6rem 1rem;
  border-left:6px solid #8aa4c8}
.branch.child{border-left-color:#c89a3c}
.branch header{font-weight:600;margin-bottom:.4rem}
.branch header a{font-weight:400}
ol.nodes{list-style:none;padding:0;margin:0}
.node{border-top:1px solid #eceff3;padding:.45rem 0;display:grid;grid-template-columns:7.5rem 1fr;gap:.2rem 1rem}
.verdict{font-weight:600;border-radius:4px;padding:.05rem .45rem;height:fit-content;text-align:center;font-size:.85rem}
[data-verdict=pass] .verdict{background:#e3f4e6;color:#1f6b30}
[data-verdict=correction] .verdict{background:#fde7e4;color:#9a2a1b}
[data-verdict=completion] .verdict{background:#e4eefd;color:#1d4f9a}
[data-verdict=duplicate] .verdict,[data-verdict=not_reached] .verdict,[data-verdict=pending] .verdict,
[data-verdict=unsolved_kept] .verdict,[data-verdict=no_passage] .verdict{background:#eceff3;color:#4a5563}
.q{font-weight:600} .a{color:#333} .unsolved{color:#9a2a1b;font-style:italic}
.ir{font-size:.88rem;color:#4a5563} .ir b{color:#1d232b}
.passage{font-size:.85rem;color:#4a5563;background:#f6f7f9;border-radius:4px;padding:.3rem .5rem;margin-top:.2rem;
  white-space:pre-wrap;overflow-wrap:anywhere}
.edge{font-size:.85rem;color:#9a5b00}
.final{background:#fff;border:1px solid #d5dae1;border-radius:8px;padding:.7rem 1rem;white-space:pre-wrap}
a.cite{font-weight:600;text-decoration:none;color:#1d4f9a}
ol.references{padding-left:1.4rem} .reference{margin:.4rem 0} .reference:target{background:#fff7d6}
.source{font-size:.8rem;border-radius:4px;padding:0 .35rem;background:#eceff3}
.status{color:#4a5563;font-style:italic}
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value), quote=True)


def _passage(passage: dict[str, str] | None, limit: int) -> str:
    if not passage:
        return ""
    text = passage["snippet"]
    if len(text) > limit:
        text = text[:limit] + "…"
    ident = f' <span class="pid">({_e(passage["id"])})</span>' if passage.get("id") else ""
    return f'<div class="passage"><b>{_e(passage["title"]) or "untitled"}</b>{ident}: {_e(text)}</div>'


def _node(branch_round: int, node: dict[str, Any]) -> str:
    anchor = f"r{branch_round}-n{node['index']}"
    answer = (
        '<span class="unsolved">[Unsolved Query]</span>'
        if node["unsolved"]
        else f'<span class="a">{_e(node["answer"])}</span>'
    )
    ir = ""
    if node["g"] is not None or node["f"] is not None:
        f, theta = node["f"], node["threshold"]
        relation = ""
        if isinstance(f, (int, float)) and isinstance(theta, (int, float)):
            relation = f" {'&gt;' if f > theta else '≤'} θ = {fmt_number(theta)}"
        ir = f'<div class="ir">IR: <i>g</i> = <b>{_e(node["g"]) or "∅"}</b>, <i>f</i> = {fmt_number(f)}{relation}'
        if node["unverifiable"]:
            ir += " · yes/no answer: not verified by a span reader"
        if node["rouge_l"] is not None:
            ir += f" · ROUGE-L = {fmt_number(node['rouge_l'])}"
        ir += "</div>"
    edge = ""
    if node["started_round"] is not None:
        started = node["started_round"]
        edge = f'<a class="edge" href="#round-{started}">→ feedback started round {started}</a>'
    was = node["duplicate_of"]
    if was and was.get("round") is not None:
        edge += (
            f'<a class="edge" href="#r{_e(was["round"])}-n{_e(was["node"])}">= round {_e(was["round"])}, '
            f"node {_e(was['node'])}: {_e(was.get('query') or '')}</a>"
        )
    why = f' title="{_e(node["reason"])}"' if node["reason"] else ""
    return (
        f'<li class="node" id="{anchor}" data-node="{node["index"]}" data-verdict="{_e(node["verdict"])}">'
        f'<span class="verdict"{why}>{_e(node["label"])}</span>'
        f'<div><div><span class="q">[Query {node["index"]}] {_e(node["query"])}</span> {answer}</div>'
        f"{ir}{_passage(node['passage'], 400)}{edge}</div></li>"
    )


def _branch(branch: dict[str, Any]) -> str:
    rnd, parent = branch["round"], branch["parent"]
    if parent:
        origin = (
            f'from <a class="edge" href="#r{_e(parent.get("round"))}-n{_e(parent.get("node"))}">round '
            f"{_e(parent.get('round'))}, node {_e(parent.get('node'))}</a> ({_e(parent.get('kind'))})"
        )
    else:
        origin = "root: the question"
    nodes = "".join(_node(rnd, node) for node in branch["nodes"]) or '<li class="status">no query parsed</li>'
    final = ""
    if branch.get("final_content"):
        final = f'<div class="ir">[Final Content] {_e(branch["final_content"])}</div>'
    css = "branch child" if parent else "branch"
    indent = min(int(branch.get("depth") or 0), 8) * 1.5
    return (
        f'<section class="{css}" id="round-{rnd}" data-round="{rnd}" style="margin-left:{indent}rem">'
        f'<header>Round {rnd} · {origin}</header><ol class="nodes">{nodes}</ol>{final}</section>'
    )


def _final(view: dict[str, Any]) -> str:
    if not view["final_content"]:
        return ""
    parts = []
    for segment in view["final_segments"]:
        if isinstance(segment, int):
            parts.append(f'<a class="cite" href="#ref-{segment}" data-ref="{segment}">[{segment}]</a>')
        else:
            parts.append(_e(segment))
    refs = []
    for ref in view["references"]:
        refs.append(
            f'<li class="reference" id="ref-{ref["index"]}" data-source="{_e(ref["source"])}">'
            f'<span class="q">{_e(ref["query"])}</span> → {_e(ref["answer"])} '
            f'<span class="source">{_e(ref["source"])}, round {_e(ref["round"])}</span>'
            f"{_passage(ref['passage'], 600)}</li>"
        )
    return (
        f'<h2>Final content</h2><div class="final" id="final">{"".join(parts)}</div>'
        f'<h2>Path <i>R</i>: the passages cited</h2><ol class="references">{"".join(refs)}</ol>'
    )


def html_fragment(view: dict[str, Any]) -> str:
    """The tree's markup without the page around it (the live page swaps it in as a run goes)."""
    status = "" if view["done"] else '<p class="status" id="status">running…</p>'
    answer = ""
    if view["done"]:
        answer = f'<div class="answer" id="answer"><b>Answer:</b> {_e(view["answer"])}</div>'
    warnings = ""
    if view["warnings"]:
        items = "".join(f"<li>{_e(w)}</li>" for w in view["warnings"])
        warnings = f'<div class="warnings" id="warnings"><b>Warnings</b><ul>{items}</ul></div>'
    branches = "".join(_branch(b) for b in view["branches"])
    return (
        f'<div id="tree" data-done="{str(view["done"]).lower()}" data-rounds="{len(view["branches"])}">'
        f"<h1>{_e(view['question'])}</h1>{answer}{status}{warnings}"
        f"<h2>Tree-of-Reasoning: {len(view['branches'])} branch(es)</h2>{branches}{_final(view)}</div>"
    )


def html_page(view: dict[str, Any], *, title: str | None = None) -> str:
    """A whole page: :func:`html_fragment` with its style, readable offline."""
    heading = title or f"SearChain: {view['question']}"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(heading)}</title><style>{STYLE}</style></head>"
        f"<body><main>{html_fragment(view)}</main></body></html>\n"
    )
