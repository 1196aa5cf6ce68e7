"""render_tree: the Tree-of-Reasoning drawn from recorded runs (HTML and Markdown)."""

from __future__ import annotations

import copy
from html.parser import HTMLParser
from typing import Any

import pytest

from searchain_graph import create_searchain_graph
from searchain_graph.viz import render_tree, tree_view
from tests.fakes import QUESTION, TREE_READS, ScriptedReader, retriever, tree_llm


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text outside tags (a small DOM for asserts)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def find(self, tag: str, **attrs: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and all(a.get(k.replace("_", "-")) == v for k, v in attrs.items())]

    def with_class(self, tag: str, css: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag and css in a.get("class", "").split()]


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    # Every round asked (a module fixture runs before the unit tests' preset is pinned): three branches.
    graph = create_searchain_graph(
        tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5, close_early=False,
        compose_supported=False,
    )  # fmt: skip
    return dict(graph.invoke({"question": QUESTION}))


def verdicts(view: dict[str, Any]) -> list[list[str]]:
    return [[node["verdict"] for node in branch["nodes"]] for branch in view["branches"]]


def test_the_view_has_a_branch_per_round_with_each_nodes_verdict(run: dict[str, Any]) -> None:
    view = tree_view(run)
    assert verdicts(view) == [
        ["pass", "correction", "not_reached"],
        ["duplicate", "completion"],
        ["duplicate", "duplicate", "duplicate"],
    ]
    assert [
        b["parent"] and (b["parent"]["round"], b["parent"]["node"], b["parent"]["kind"]) for b in view["branches"]
    ] == [
        None,
        (1, 2, "correction"),
        (2, 2, "completion"),
    ]
    corrected = view["branches"][0]["nodes"][1]
    assert (corrected["g"], corrected["f"], corrected["threshold"]) == ("Toronto", 3.0, 1.5)
    assert corrected["passage"]["title"] == "Kevin Drew" and corrected["passage"]["id"] == "p2"
    assert corrected["started_round"] == 2
    assert view["branches"][1]["nodes"][1]["started_round"] == 3
    assert [s for s in view["final_segments"] if isinstance(s, int)] == [1, 2, 3]


def test_the_html_page_draws_branches_verdicts_edges_and_citation_links(run: dict[str, Any]) -> None:
    page = render_tree(run)
    dom = Elements(page)
    assert page.startswith("<!DOCTYPE html>") and "<script" not in page and "http" not in page  # offline
    assert [a["data-round"] for a in dom.with_class("section", "branch")] == ["1", "2", "3"]
    assert [a["data-verdict"] for a in dom.with_class("li", "node")] == [
        v for row in verdicts(tree_view(run)) for v in row
    ]
    edges = {a["href"] for a in dom.with_class("a", "edge")}
    assert {"#round-2", "#round-3", "#r1-n2", "#r2-n2"} <= edges
    assert {a["id"] for a in dom.with_class("li", "node")} >= {"r1-n2", "r2-n2"}  # edge targets exist
    cites = [a["href"] for a in dom.with_class("a", "cite")]
    refs = [a["id"] for a in dom.with_class("li", "reference")]
    assert cites == ["#ref-1", "#ref-2", "#ref-3"] and refs == ["ref-1", "ref-2", "ref-3"]
    assert [a["data-source"] for a in dom.with_class("li", "reference")] == ["llm", "corrected", "completed"]


def test_markdown_has_a_table_per_round_and_linked_citations(run: dict[str, Any]) -> None:
    md = render_tree(run, "markdown")
    assert md.count("| # | query | LLM answer |") == 3
    assert "**Round 2** · from round 1, node 2 (correction)" in md
    assert "**corrected** → round 2" in md and "**completed** → round 3" in md
    assert "[[1]](#ref-1)" in md and '<a id="ref-3"></a>' in md
    assert "3.00 > θ 1.50" in md


def test_passages_and_questions_are_shown_not_run() -> None:
    evil = '<script>alert("x")</script>'
    output = {
        "question": f"What does {evil} do?",
        "answer": evil,
        "final_content": f"It runs {evil} [1].",
        "references": [
            {
                "index": 1,
                "query": evil,
                "answer": evil,
                "source": "llm",
                "round": 1,
                "document": {"page_content": f"A passage with {evil} | and [pipes]", "metadata": {"title": evil}},
            }
        ],
        "tree": [
            {
                "round": 1,
                "parent": None,
                "nodes": [{"index": 1, "query": evil, "answer": evil, "unsolved": False}],
                "checks": [
                    {
                        "node": 1,
                        "query": evil,
                        "action": "pass",
                        "reader_answer": evil,
                        "confidence": 2.0,
                        "passage": {"title": evil, "id": "x", "snippet": evil},
                    }
                ],
            }
        ],
    }
    page = render_tree(output)
    assert "<script>" not in page and "&lt;script&gt;" in page
    md = render_tree(output, "markdown")
    assert "<script>" not in md and "\\| and \\[pipes\\]" in md


def test_a_very_long_passage_is_cut_in_the_tree(run: dict[str, Any]) -> None:
    output = copy.deepcopy(run)
    output["references"][0]["document"]["page_content"] = "word " * 20_000
    output["tree"][0]["checks"][0]["passage"]["snippet"] = "word " * 20_000
    page = render_tree(output)
    assert len(page) < len(render_tree(run)) + 2_000


def test_five_rounds_and_a_warning_show(run: dict[str, Any]) -> None:
    branch = {
        "nodes": [{"index": 1, "query": "Q?", "answer": "A", "unsolved": False}],
        "checks": [],
        "final_content": None,
    }
    tree = [{**branch, "round": 1, "parent": None}] + [
        {**branch, "round": r, "parent": {"round": r - 1, "node": 1, "kind": "correction"}} for r in range(2, 6)
    ]
    output = {
        "question": "Q?",
        "answer": "A",
        "final_content": "A.",
        "tree": tree,
        "warnings": ["round 5: stopped at max_rounds=5 with a pending correction"],
    }
    dom = Elements(render_tree(output))
    assert len(dom.with_class("section", "branch")) == 5
    assert dom.find("div", id="warnings") and "max_rounds=5" in "".join(dom.text)


def test_the_tree_draws_the_recorded_verdicts_and_guesses_none() -> None:
    node = {"query": "Who is the performer of Spirit If...?", "answer": "Kevin Drew", "unsolved": False}
    check = {"node": 1, "query": node["query"], "action": "pass", "reader_answer": "x", "confidence": -3.0}
    duplicate = {
        "node": 2,
        "query": node["query"],
        "action": "duplicate",
        "reason": "asked before (round 1, node 1)",
        "duplicate_of": {"round": 1, "node": 1, "query": node["query"]},
    }
    nodes = [{**node, "index": 1}, {**node, "index": 2}]
    output = {"question": "Q?", "answer": "Kevin Drew", "tree": [{"round": 1, "parent": None, "nodes": nodes}]}
    output["tree"][0]["checks"] = [check, duplicate]
    view = tree_view(output)
    assert verdicts(view) == [["pass", "duplicate"]]
    assert view["branches"][0]["nodes"][1]["duplicate_of"] == duplicate["duplicate_of"]
    # Without the graph's record the same query is not called a duplicate: the view draws, it does not judge.
    output["tree"][0]["checks"] = [check]
    assert verdicts(tree_view(output)) == [["pass", "not_reached"]]


def test_an_empty_run_and_a_partial_one_render() -> None:
    assert "0 branch(es)" in render_tree({"question": "Q?"})
    assert render_tree({}, "markdown").startswith("### ")
    partial = {
        "question": "Q?",
        "tree": [
            {"round": 1, "parent": None, "nodes": [{"index": 1, "query": "Q1?", "answer": "A", "unsolved": False}]}
        ],
    }
    dom = Elements(render_tree(partial, "fragment"))
    assert dom.find("div", id="tree", data_done="false")
    assert [a["data-verdict"] for a in dom.with_class("li", "node")] == ["pending"]
    with pytest.raises(ValueError, match="format must be"):
        render_tree(partial, "pdf")  # type: ignore[arg-type]
