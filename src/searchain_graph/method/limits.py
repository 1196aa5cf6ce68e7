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

__all__ = ["MAX_ANSWER_CHARS", "MAX_FINAL_CONTENT_CHARS", "MAX_PASSAGE_CHARS", "MAX_REPLY_CHARS"]

MAX_REPLY_CHARS = 16_000
"""An LLM reply longer than this is cut (a Chain-of-Query of 32 nodes is about 3,000)."""

MAX_PASSAGE_CHARS = 8_000
"""A retrieved passage longer than this is cut before anything reads it or shows it to the LLM
(Wikipedia paragraphs, and DPR's 100-word passages, are far shorter)."""

MAX_ANSWER_CHARS = 2_000
"""A run's answer, and a reader's *g*, longer than this are cut (long-form answers included)."""

MAX_FINAL_CONTENT_CHARS = 16_000
"""A run's final content longer than this is cut."""
