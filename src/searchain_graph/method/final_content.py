"""The run's final content: the tracing output checked against the correct path *R*.

``Tracing(T, R)`` asks the LLM to write the final content with ``[n]`` citations of *R*'s passages.
A small model's output is checked before it is kept (:func:`final_content`): citations of passages
that do not exist are removed; output that cites nothing, repeats the worked example, or cites an
entry IR corrected or completed for a statement without that entry's answer
(:func:`statements_against_path`) is replaced by content composed from the path
(:func:`compose_from_path`). An answer naming neither of two options the question offers is
replaced by the option the path links it to (:func:`~searchain_graph.method.choices.answer_as_option`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from searchain_graph.ir.corpus import joined_text
from searchain_graph.method.choices import answer_as_option
from searchain_graph.method.limits import bounded_output
from searchain_graph.method.parsing import (
    citations,
    copied_names,
    drop_invalid_citations,
    extract_final_answer,
    mentions,
    parse_chain,
    strip_citations,
)
from searchain_graph.method.prompts import TRACING_DEMONSTRATION_NAMES
from searchain_graph.method.state import Branch, Reference, SearChainState

__all__ = ["NO_ANSWER", "compose_from_path", "final_content", "passage_text_of", "statements_against_path"]

NO_ANSWER = "the run has no answer: the LLM stated none, and none is on the path"
"""The answer of a run that ends with nothing to say (see :func:`~searchain_graph.method.limits.bounded_output`)."""


def final_content(state: SearChainState, task: str, reply: str | None) -> dict[str, Any]:
    """The final content and answer of a run, from the tracing ``reply`` (None: no tracing ran).

    Output that cites nothing, repeats the worked example, or cites an IR-changed entry for a
    statement without its answer is replaced by content composed from *R* itself, with a warning.
    """
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
            or next((r["answer"] for r in reversed(path) if r["answer"]), "")
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
        on_path = " ".join(f"{r['query']} {r['answer']} {passage_text_of(r)}" for r in path)
        copied = copied_names(content, f"{state['question']} {on_path}", TRACING_DEMONSTRATION_NAMES)
        if copied:
            content = compose_from_path(path, next((r["answer"] for r in reversed(path) if r["answer"]), ""))
            update["warnings"].append(
                f"the tracing output repeats the worked example ({', '.join(copied)}), which neither the question "
                "nor the path names; the final content was composed from the path"
            )
        elif not citations(content):
            content = compose_from_path(path, best_answer(content))
            update["warnings"].append(
                "the tracing output cited no passage; the final content was composed from the path"
            )
        elif against := statements_against_path(content, path):
            content = compose_from_path(path, best_answer(content))
            update["warnings"].append(
                f"the tracing output cites {', '.join(f'[{n}]' for n in against)} for a statement without the "
                "answer IR gave there; the final content was composed from the path"
            )
    answer, chosen = answer_as_option(state["question"], best_answer(content) or content, _pairs(path))
    if chosen:
        update["warnings"].append(chosen)
    out = bounded_output(content, answer, update["warnings"], no_answer=NO_ANSWER)
    return {**update, **out}


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def statements_against_path(content: str, path: Sequence[Reference]) -> list[int]:
    """The entries of *R* changed by IR that a statement of ``content`` cites without stating.

    A sentence citing ``[n]``, where entry ``n``'s answer was corrected or completed by IR, must
    state that answer (:func:`~searchain_graph.method.parsing.mentions`); "TCS is headquartered in
    Kochi [2]", where IR's entry 2 says Mumbai, cites the passage it contradicts. Entries the LLM
    answered itself are not checked: their passage agreed with the LLM, or was not trusted.
    """
    changed = {r["index"]: r["answer"] for r in path if r.get("source") in ("corrected", "completed")}
    against: list[int] = []
    for sentence in _SENTENCE_END.split(content or ""):
        for n in citations(sentence):
            if n in changed and n not in against and not mentions(strip_citations(sentence), changed[n]):
                against.append(n)
    return against


def compose_from_path(path: Sequence[Reference], answer: str) -> str:
    """Final content written from *R* itself: one cited sentence per step, then the answer.

    The only citations are *R*'s own: a marker the LLM wrote into a node's answer ("his wife,
    Julie Rivette [3]", on a path of two entries) is left out.
    """
    steps = []
    for ref in path:
        said = " ".join(strip_citations(ref["answer"]).split()).rstrip(" .") or "not found in the passage"
        steps.append(f"{ref['query'].rstrip(' ?')}: {said} [{ref['index']}].")
    return " ".join(steps) + (f" So the final answer is {answer.strip().rstrip('.')}." if answer else "")


def _pairs(path: Sequence[Reference]) -> list[tuple[str, str]]:
    return [(r["query"], r["answer"]) for r in path]


def passage_text_of(reference: Reference) -> str:
    """The text of a path entry's passage, title first (empty when it has none)."""
    doc = reference.get("document")
    return joined_text(doc["page_content"], doc.get("metadata") or {}) if doc else ""
