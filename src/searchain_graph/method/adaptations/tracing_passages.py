"""Tracing over the passages: each step of *R* shown with the passage IR read for it (``Context.tracing``).

The paper's ``Tracing(T, R)`` shows the LLM *R*'s queries and answers (``tracing="pairs"``); the
passages stay behind the reader's gate. Where the reader's *f* was under θ, or its span was not
the answer, a passage holding the answer never reaches the final content: on HotpotQA
development questions the answer's paragraph was read for more questions than were answered.

* ``"passages"``: each ``[Query n]``/``[Answer n]`` pair carries its passage as ``[Reference n]``
  (the top-1 passage IR checked the node with, cut to :data:`PASSAGE_WORDS` words), and the
  instruction asks the LLM to follow a reference that answers its query otherwise.
* ``"confirmed"``: the same passages, but an answer is shown only where IR stands behind it
  (:func:`confirmed`): IR gave it (a correction or a completion), or the reader's *g* for the
  passage is in it. A step the LLM answered alone, unchecked because *f* ≤ θ, shows its query
  and passage only, for the LLM to read.
* ``"reader"``: the LLM answers the question from the path's passages alone, in IRCoT's final
  reader layout (``Wikipedia Title: ...`` paragraphs, then the question; one worked example), and
  the final content is composed from *R* with that answer
  (:func:`~searchain_graph.method.adaptations.tracing_checks.compose_from_path`). Only multi-hop
  QA reads this way (:data:`READER_TASKS`); the other tasks keep ``"pairs"``.
* ``"reader_confirmed"``: the same reader, also shown the steps :func:`confirmed` answers
  ("Checked answers:", one query and answer a line) where there are any.

The citations stay ``[n]``: the final content still cites each step's supporting passage.
"""

from __future__ import annotations

from collections.abc import Sequence

from searchain_graph.method.adaptations.chain_repair import copied_names
from searchain_graph.method.adaptations.tracing_checks import compose_from_path, last_answer
from searchain_graph.method.adaptations.turns import Turn, tracing_turns
from searchain_graph.method.parsing import answer_contains, holds_markers, strip_citations, trim_answer
from searchain_graph.method.prompts import (
    TRACING_CONFIRMED_EXAMPLE,
    TRACING_CONFIRMED_INSTRUCTION,
    TRACING_DEMONSTRATION_NAMES,
    TRACING_PAIR,
    TRACING_PASSAGE_ONLY,
    TRACING_PASSAGE_PAIR,
    TRACING_PASSAGES_EXAMPLE,
    TRACING_PASSAGES_INSTRUCTION,
    TRACING_READER_CONFIRMED_PROMPT,
    TRACING_READER_PROMPT,
)
from searchain_graph.method.state import Reference

__all__ = [
    "PASSAGE_WORDS",
    "READER_TASKS",
    "confirmed",
    "pairs_with_passages",
    "passages_tracing_turns",
    "reader_prompt",
    "reader_reply",
]

READER_TASKS: tuple[str, ...] = ("multihop",)
"""Tasks ``"reader"`` and ``"reader_confirmed"`` apply to: multi-hop QA, where they were chosen on
development questions. A yes/no, fact-checking, slot-filling or long-form answer keeps ``"pairs"``."""

PASSAGE_WORDS = 120
"""Words of each step's passage shown to the LLM (a HotpotQA paragraph is 60-150 words)."""


def confirmed(ref: Reference) -> bool:
    """Whether IR stands behind a step's answer: it gave it, or the reader's *g* is in it."""
    if ref.get("source") in ("corrected", "completed"):
        return True
    g = ref.get("reader_answer") or ""
    return bool(g.strip()) and answer_contains(ref["answer"], g)


def pairs_with_passages(path: Sequence[Reference], words: int = PASSAGE_WORDS, *, only_confirmed: bool = False) -> str:
    """*R* in path order, each step with its passage (``Title: text``, the text cut to ``words``) before its answer.

    With ``only_confirmed``, an answer IR did not confirm (:func:`confirmed`) is left out. A step
    without a passage (the retriever returned nothing) is shown as the paper's pair.
    """
    lines = []
    for ref in path:
        passage = _passage(ref, words)
        if not passage:
            pair = TRACING_PAIR.format(index=ref["index"], query=ref["query"], answer=ref["answer"])
        elif only_confirmed and not confirmed(ref):
            pair = TRACING_PASSAGE_ONLY.format(index=ref["index"], query=ref["query"], passage=passage)
        else:
            pair = TRACING_PASSAGE_PAIR.format(
                index=ref["index"], query=ref["query"], passage=passage, answer=ref["answer"]
            )
        lines.append(pair)
    return "\n".join(lines)


def _passage(ref: Reference, words: int) -> str:
    """``Title: text`` of a step's passage on one line (empty without a passage)."""
    title, text = _title_text(ref, words)
    return f"{title}: {text}" if title and text else title or text


def _title_text(ref: Reference, words: int) -> tuple[str, str]:
    """A step's passage: its title and its text cut to ``words``, each on one line (empty without one)."""
    doc = ref.get("document")
    if not doc:
        return "", ""
    title = " ".join(str((doc.get("metadata") or {}).get("title") or "").split())
    body = str(doc.get("page_content") or "").split()
    return title, " ".join(body[:words]) + (" ..." if len(body) > words else "")


def passages_tracing_turns(
    question: str, path: Sequence[Reference], layout: str, *, only_confirmed: bool
) -> list[Turn]:
    """The tracing prompt over ``path`` with its passages, as chat turns in ``layout``."""
    return tracing_turns(
        question,
        pairs_with_passages(path, only_confirmed=only_confirmed),
        layout,
        instruction=TRACING_CONFIRMED_INSTRUCTION if only_confirmed else TRACING_PASSAGES_INSTRUCTION,
        example=TRACING_CONFIRMED_EXAMPLE if only_confirmed else TRACING_PASSAGES_EXAMPLE,
    )


def reader_prompt(
    question: str, path: Sequence[Reference], words: int = PASSAGE_WORDS, *, with_confirmed: bool = False
) -> str:
    """``tracing="reader"``: the path's passages (each once, in path order) and the question.

    With ``with_confirmed`` (``tracing="reader_confirmed"``), the answers IR stands behind follow
    the passages; a path with none gets the plain reader's prompt.
    """
    paragraphs, seen = [], set()
    for ref in path:
        title, text = _title_text(ref, words)
        if not (title or text) or (title, text) in seen:
            continue
        seen.add((title, text))
        paragraphs.append(f"Wikipedia Title: {title}\n{text}" if title else text)
    checked = [f"{ref['query'].strip()} {ref['answer'].strip()}" for ref in path if confirmed(ref)]
    if with_confirmed and checked:
        return TRACING_READER_CONFIRMED_PROMPT.format(
            paragraphs="\n\n".join(paragraphs), checked="\n".join(checked), question=question
        )
    return TRACING_READER_PROMPT.format(paragraphs="\n\n".join(paragraphs), question=question)


def reader_reply(path: Sequence[Reference], reply: str, question: str, *, checks: bool) -> tuple[str, str | None]:
    """The tracing output of ``tracing="reader"``: *R* composed with the answer the reader gave.

    The answer is the reply's first line, without ``A:`` and the quotes and full stops around it.
    With ``checks`` (``Context.tracing_checks``), a reply that gives no answer, writes a chain
    instead (``[Query 1]: ...``) or repeats the worked example's names, which neither the question
    nor the path names, is not kept: *R*'s own last answer ends the content.

    Returns:
        The ``[Final Content]`` text, and the warning when the reply was not kept.
    """
    lines = [line.strip() for line in (reply or "").splitlines() if line.strip()]
    first = lines[0].removeprefix("A:") if lines else ""
    answer = trim_answer(first)
    why = None
    if checks:
        on_path = " ".join(f"{r['query']} {r['answer']} {_passage(r, PASSAGE_WORDS)}" for r in path)
        copied = copied_names(answer, f"{question} {on_path}", TRACING_DEMONSTRATION_NAMES)
        if not answer:
            why = "gave no answer"
        elif holds_markers(answer):
            why = "wrote a chain or the prompt's words, not an answer"
        elif copied:
            why = f"repeats the worked example ({', '.join(copied)})"
        if why:
            answer = trim_answer(strip_citations(last_answer(path)))
            why = f"the tracing reader {why}; the final answer is the path's last answer"
    return "[Final Content]: " + compose_from_path(path, answer), why
