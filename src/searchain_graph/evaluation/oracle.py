"""The oracle-chain benchmark: SearChain's IR side measured apart from the LLM's skill.

A 135M model writes chains too poor to tell whether verification and completion work. Here
the chain comes from the dataset instead: each question's gold decomposition (MuSiQue,
Bamboogle) gives the nodes ``(q_i, a_i)``. A controlled fraction of sub-answers is replaced
by a wrong one (the sub-answer of another question), another fraction is marked
``[Unsolved Query]``, and the rest stay correct. Every node then goes through the IR side
exactly as in the graph: the top-1 passage for ``q_i``, the reader's ``(g, f)``, and the
same decision function with the same settings (:func:`oracle_verdict`:
:func:`~searchain_graph.method.verdict.ir_verdict` with the
:class:`~searchain_graph.method.context.Context` a graph on the same reader has, from
:func:`~searchain_graph.method.graph.reader_settings`). Since *f* does not depend on θ, one
reading per node gives the outcome at every θ.

Outcomes, per θ:

* **wrong nodes repaired**: verification fired and *g* matches the gold sub-answer;
  **mis-corrected**: it fired with another wrong *g*; **missed**: it did not fire;
* **correct nodes broken**: verification fired on a correct answer (its *g* does not
  match the gold sub-answer), replacing knowledge the LLM had right;
* **unsolved nodes completed**: completion always fires; it helps when *g* matches.

*g* matches a gold answer when either contains the other after SQuAD normalisation
(token-aligned), and *g* is not empty. Later sub-questions are resolved with the *gold*
earlier answers, so each node is judged on its own.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from langchain_core.retrievers import BaseRetriever

from searchain_graph.evaluation.datasets import Example
from searchain_graph.ir.corpus import passage_text
from searchain_graph.ir.readers.base import Reader, passage_of, read_pairs
from searchain_graph.method.calls import doc_dict
from searchain_graph.method.context import Context
from searchain_graph.method.parsing import answer_contains
from searchain_graph.method.state import ChainNode
from searchain_graph.method.verdict import ir_verdict

DEFAULT_THRESHOLDS = (-10.0, -2.0, -1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)


def matches(g: str, gold: str) -> bool:
    """Whether the reader's *g* states the gold answer (either contains the other, normalised)."""
    return bool(g.strip()) and (answer_contains(g, gold) or answer_contains(gold, g))


def build_oracle_nodes(
    examples: Sequence[Example], *, wrong_fraction: float = 0.3, unsolved_fraction: float = 0.2, seed: int = 0
) -> list[dict[str, Any]]:
    """The perturbed nodes: one per decomposition step with a gold answer.

    Each node is ``{"qid", "query", "gold", "answer", "condition"}`` with ``condition`` one of
    ``"correct"``, ``"wrong"`` or ``"unsolved"`` (``answer`` is ``None`` then).

    Raises:
        ValueError: the fractions are not in [0, 1] or sum above 1, or no example has a
            decomposition with answers.
    """
    if not (0 <= wrong_fraction <= 1 and 0 <= unsolved_fraction <= 1 and wrong_fraction + unsolved_fraction <= 1):
        raise ValueError("wrong_fraction and unsolved_fraction must be in [0, 1] and sum to at most 1")
    steps = [
        (ex["qid"], step["question"], step["answer"])
        for ex in examples
        for step in ex.get("decomposition") or []
        if step.get("answer") and step.get("question")
    ]
    if not steps:
        raise ValueError("no example has a gold decomposition with sub-answers (use MuSiQue or Bamboogle)")
    rng = random.Random(seed)
    pool = [answer for _, _, answer in steps]
    nodes: list[dict[str, Any]] = []
    for qid, query, gold in steps:
        draw = rng.random()
        if draw < wrong_fraction:
            wrong = next((a for a in rng.sample(pool, min(len(pool), 20)) if not matches(a, gold)), None)
            if wrong is not None:
                nodes.append({"qid": qid, "query": query, "gold": gold, "answer": wrong, "condition": "wrong"})
                continue
        if draw < wrong_fraction + unsolved_fraction:
            nodes.append({"qid": qid, "query": query, "gold": gold, "answer": None, "condition": "unsolved"})
        else:
            nodes.append({"qid": qid, "query": query, "gold": gold, "answer": gold, "condition": "correct"})
    return nodes


def read_oracle_nodes(nodes: list[dict[str, Any]], retriever: BaseRetriever, reader: Reader) -> list[dict[str, Any]]:
    """Retrieve the top-1 passage for each node and read it; adds ``document``, ``g``, ``f``, ``hit``.

    ``hit`` says whether the passage contains the gold sub-answer (retrieval quality).
    """
    results = retriever.batch([n["query"] for n in nodes])
    pairs, where = [], []
    for i, (node, docs) in enumerate(zip(nodes, results, strict=True)):
        doc = docs[0] if docs else None
        node["document"] = doc_dict(doc) if doc else None
        node["hit"] = doc is not None and answer_contains(passage_text(doc), node["gold"])
        node["g"], node["f"] = "", None
        if doc is not None:
            pairs.append((node["query"], passage_of(doc)))
            where.append(i)
    for i, out in zip(where, read_pairs(reader, pairs), strict=True):
        nodes[i]["g"], nodes[i]["f"] = out.answer, out.confidence
    return nodes


def oracle_verdict(node: dict[str, Any], settings: Context) -> str:
    """The graph's verdict on one oracle node (an action of :func:`~searchain_graph.method.verdict.ir_verdict`)."""
    chain_node: ChainNode = {
        "index": 1,
        "query": node["query"],
        "answer": node["answer"],
        "unsolved": node["answer"] is None,
    }
    result = {"document": node["document"], "answer": node["g"], "confidence": node["f"]}
    return str(ir_verdict(chain_node, result, settings)["action"])


def sweep(
    nodes: Sequence[dict[str, Any]],
    thresholds: Sequence[float] = DEFAULT_THRESHOLDS,
    *,
    settings: Context,
) -> list[dict[str, Any]]:
    """Outcome rates at each θ (see the module docstring), from nodes read once.

    Args:
        nodes: Read oracle nodes (:func:`read_oracle_nodes`).
        thresholds: θ to sweep.
        settings: The graph's settings on the reader that read them
            (:func:`~searchain_graph.method.graph.reader_settings`); θ is replaced by each of
            ``thresholds`` in turn, every other decision is the graph's.
    """
    rows = []
    by = {c: [n for n in nodes if n["condition"] == c] for c in ("correct", "wrong", "unsolved")}
    for theta in thresholds:
        at_theta = replace(settings, confidence_threshold=theta)

        def verdict(node: dict[str, Any], at: Context = at_theta) -> str:
            return oracle_verdict(node, at)

        wrong = [(n, verdict(n)) for n in by["wrong"]]
        correct = [(n, verdict(n)) for n in by["correct"]]
        unsolved = [(n, verdict(n)) for n in by["unsolved"]]

        def share(items: list[tuple[dict[str, Any], str]], test: Any) -> float:
            return sum(1 for n, v in items if test(n, v)) / len(items) if items else 0.0

        rows.append(
            {
                "theta": theta,
                "wrong_repaired": share(wrong, lambda n, v: v == "correction" and matches(n["g"], n["gold"])),
                "wrong_miscorrected": share(wrong, lambda n, v: v == "correction" and not matches(n["g"], n["gold"])),
                "wrong_missed": share(wrong, lambda n, v: v != "correction"),
                "correct_broken": share(correct, lambda n, v: v == "correction" and not matches(n["g"], n["gold"])),
                "unsolved_completed": share(unsolved, lambda n, v: v == "completion" and matches(n["g"], n["gold"])),
                "n_wrong": len(wrong),
                "n_correct": len(correct),
                "n_unsolved": len(unsolved),
            }
        )
    return rows


def render_sweep(
    rows: Sequence[dict[str, Any]], nodes: Sequence[dict[str, Any]], *, reader_name: str, chosen: int | None = None
) -> str:
    """A Markdown table of :func:`sweep`'s rows, with retrieval hit rate and the *f* distribution.

    ``chosen``: the index of a row to mark (its θ in bold, "(chosen)").
    """
    hit = sum(1 for n in nodes if n.get("hit")) / len(nodes) if nodes else 0.0
    fs = sorted(n["f"] for n in nodes if n.get("f") is not None)
    spread = f"min {fs[0]:.2f}, median {fs[len(fs) // 2]:.2f}, max {fs[-1]:.2f}" if fs else "none"
    lines = [
        f"Reader: {reader_name}. Nodes: {rows[0]['n_correct']} correct, {rows[0]['n_wrong']} wrong, "
        f"{rows[0]['n_unsolved']} unsolved. Top-1 passage holds the gold sub-answer for {100 * hit:.1f}% of nodes. "
        f"Reader confidence f: {spread}.",
        "",
        "| θ | wrong repaired | wrong mis-corrected | wrong missed | correct broken | unsolved completed |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for i, r in enumerate(rows):
        theta = f"**{r['theta']:g}** (chosen)" if i == chosen else f"{r['theta']:g}"
        lines.append(
            f"| {theta} | {100 * r['wrong_repaired']:.1f}% | {100 * r['wrong_miscorrected']:.1f}% | "
            f"{100 * r['wrong_missed']:.1f}% | {100 * r['correct_broken']:.1f}% | "
            f"{100 * r['unsolved_completed']:.1f}% |"
        )
    return "\n".join(lines) + "\n"
