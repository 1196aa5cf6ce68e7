"""The run's final content and answer, from the tracing output and the correct path *R*.

``Tracing(T, R)`` asks the LLM to write the final content with ``[n]`` citations of *R*'s passages.
Citations of passages that do not exist are removed, and the answer is the one the content states
("the final answer is ..."), else the chain's, else the last on the path. Three adaptations act here
when their ``Context`` fields are on: the tracing checks
(:mod:`~searchain_graph.method.adaptations.tracing_checks`), the options' answer
(:mod:`~searchain_graph.method.adaptations.options`) and the order of two dates
(:mod:`~searchain_graph.method.adaptations.date_order`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from searchain_graph.ir.corpus import joined_text
from searchain_graph.method.adaptations.date_order import dated_pairs, ordered_answer
from searchain_graph.method.adaptations.options import answer_as_option
from searchain_graph.method.adaptations.tracing_checks import checked_tracing, compose_from_path, last_answer
from searchain_graph.method.context import Context
from searchain_graph.method.limits import bounded_output
from searchain_graph.method.parsing import drop_invalid_citations, extract_final_answer, parse_chain
from searchain_graph.method.state import Branch, Reference, SearChainState

__all__ = ["NO_ANSWER", "final_content", "passage_text_of"]

NO_ANSWER = "the run has no answer: the LLM stated none, and none is on the path"
"""The answer of a run that ends with nothing to say (see :func:`~searchain_graph.method.limits.bounded_output`)."""


def final_content(state: SearChainState, settings: Context, reply: str | None) -> dict[str, Any]:
    """The final content and answer of a run, from the tracing ``reply`` (None: no tracing ran)."""
    task = settings.task
    path = state.get("references") or []
    tree = state.get("tree") or []
    last: Branch | None = tree[-1] if tree else None
    chain_content = last["final_content"] if last else None

    def best_answer(content: str | None) -> str:
        # Most specific first: the traced "final answer is", the chain's own, the last answer
        # on the path, then the last answer the LLM wrote in its newest chain.
        return (
            extract_final_answer(content, task)
            or extract_final_answer(chain_content, task)
            or last_answer(path)
            or next((n["answer"] for n in reversed(last["nodes"] if last else []) if n["answer"]), "")
        )

    update: dict[str, Any] = {"warnings": []}
    if reply is None:
        content = chain_content or " ".join((last["raw"] if last else "").split())
        update["warnings"].append("no node reached the correct path; the final content is the LLM's own, uncited")
    else:
        raw = reply
        content = parse_chain(raw).final_content or " ".join(raw.split())
        content, bad = drop_invalid_citations(content, len(path))
        if bad:
            update["warnings"].append(f"tracing cited passages that do not exist: {sorted(set(bad))}; removed")
        if settings.tracing_checks:
            on_path = " ".join(f"{r['query']} {r['answer']} {passage_text_of(r)}" for r in path)
            content, why = checked_tracing(content, path, state["question"], on_path, best_answer)
            if why:
                update["warnings"].append(why)
    answer = best_answer(content) or content
    if settings.option_answers:
        answer, chosen = answer_as_option(state["question"], answer, _pairs(path))
        if chosen:
            update["warnings"].append(chosen)
    if settings.date_order:
        ordered, why = ordered_answer(state["question"], answer, dated_pairs(path))
        if why:
            answer, content = ordered, compose_from_path(path, ordered)
            update["warnings"].append(f"{why}; the final content was composed from the path")
    out = bounded_output(content, answer, update["warnings"], no_answer=NO_ANSWER)
    return {**update, **out}


def _pairs(path: Sequence[Reference]) -> list[tuple[str, str]]:
    return [(r["query"], r["answer"]) for r in path]


def passage_text_of(reference: Reference) -> str:
    """The text of a path entry's passage, title first (empty when it has none)."""
    doc = reference.get("document")
    return joined_text(doc["page_content"], doc.get("metadata") or {}) if doc else ""
