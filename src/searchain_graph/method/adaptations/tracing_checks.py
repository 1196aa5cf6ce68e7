"""Tracing checks: the tracing output kept only when it cites the path it was given (``Context.tracing_checks``).

``Tracing(T, R)`` asks the LLM to write the final content with ``[n]`` citations of *R*'s
passages. The paper keeps what it writes. A small model's output may cite nothing, repeat the
worked example ("Toronto Coach Terminal" in an answer about Ohio), or cite a passage IR corrected
for a statement without IR's answer ("TCS is headquartered in Kochi [2]", where entry 2 says
Mumbai). :func:`checked_tracing` replaces such output by content composed from *R* itself
(:func:`compose_from_path`), and says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from searchain_graph.method.adaptations.chain_repair import copied_names
from searchain_graph.method.parsing import citations, mentions, strip_citations
from searchain_graph.method.prompts import TRACING_DEMONSTRATION_NAMES
from searchain_graph.method.state import Reference

__all__ = ["checked_tracing", "compose_from_path", "last_answer", "statements_against_path"]


def last_answer(path: Sequence[Reference]) -> str:
    """The answer of *R*'s last step that has one (empty when none does)."""
    return next((r["answer"] for r in reversed(path) if r["answer"]), "")


def checked_tracing(
    content: str, path: Sequence[Reference], question: str, on_path: str, best_answer: Callable[[str], str]
) -> tuple[str, str | None]:
    """The final content to keep, and the warning when it was composed from the path instead.

    Args:
        content: The tracing output's final content, invalid citations removed.
        path: *R*.
        question: The run's question.
        on_path: The text of *R* (queries, answers, passages): a name found there is not copied.
        best_answer: The answer a composed content ends with, from the content replaced.
    """
    copied = copied_names(content, f"{question} {on_path}", TRACING_DEMONSTRATION_NAMES)
    if copied:
        return compose_from_path(path, last_answer(path)), (
            f"the tracing output repeats the worked example ({', '.join(copied)}), which neither the question "
            "nor the path names; the final content was composed from the path"
        )
    if not citations(content):
        return compose_from_path(path, best_answer(content)), (
            "the tracing output cited no passage; the final content was composed from the path"
        )
    if against := statements_against_path(content, path):
        return compose_from_path(path, best_answer(content)), (
            f"the tracing output cites {', '.join(f'[{n}]' for n in against)} for a statement without the "
            "answer IR gave there; the final content was composed from the path"
        )
    return content, None


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
