"""The bounds on text a run holds and sends: each a documented limit, each cut with a warning.

Text comes into a run from four places: the question (refused beyond ``max_question_chars``), the
LLM's replies, the retriever's passages and the reader's answers. The driver
(:mod:`searchain_graph.method.driver`) bounds the last three as they come in, and the final steps
bound what a run returns. Every prompt is built from these pieces (at most
:data:`~searchain_graph.method.parsing.MAX_NODES` nodes a chain, ``max_rounds`` rounds), so what
goes to the LLM is bounded too: with the defaults, a SearChain prompt is at most about
``max_question_chars + max_rounds * (MAX_REPLY_CHARS + MAX_PASSAGE_CHARS + 1,000)`` characters
(the conversation after five rounds: under 130,000), and a baseline's at most its paragraphs
(IRCoT: 15) times :data:`MAX_PASSAGE_CHARS` plus its own steps.
"""

from __future__ import annotations

from searchain_graph._text import bound_text
from searchain_graph.method.parsing import clean_answer

__all__ = ["MAX_ANSWER_CHARS", "MAX_FINAL_CONTENT_CHARS", "MAX_PASSAGE_CHARS", "MAX_REPLY_CHARS", "bounded_output"]

MAX_REPLY_CHARS = 16_000
"""An LLM reply longer than this is cut (a Chain-of-Query of 32 nodes is about 3,000)."""

MAX_PASSAGE_CHARS = 8_000
"""A retrieved passage longer than this is cut before anything reads it or shows it to the LLM
(Wikipedia paragraphs, and DPR's 100-word passages, are far shorter)."""

MAX_ANSWER_CHARS = 2_000
"""A run's answer, and a reader's *g*, longer than this are cut (long-form answers included)."""

MAX_FINAL_CONTENT_CHARS = 16_000
"""A run's final content longer than this is cut."""


def bounded_output(content: str, answer: str, warnings: list[str], *, no_answer: str) -> dict[str, str]:
    """A run's ``final_content`` and ``answer``, each within its limit, the answer free of markers.

    SearChain's tracing and every baseline's last step end with this. Appends to ``warnings`` a
    line for each cut, and ``no_answer`` when no answer is left
    (:func:`~searchain_graph.method.parsing.clean_answer`).
    """
    answer = clean_answer(answer)
    if not answer:
        warnings.append(no_answer)
    answer, cut = bound_text(answer, MAX_ANSWER_CHARS)
    if cut:
        warnings.append(f"the answer was cut to {MAX_ANSWER_CHARS:,} characters ({cut:,} dropped)")
    content, cut = bound_text(content, MAX_FINAL_CONTENT_CHARS)
    if cut:
        warnings.append(f"the final content was cut to {MAX_FINAL_CONTENT_CHARS:,} characters ({cut:,} dropped)")
    return {"final_content": content, "answer": answer}
