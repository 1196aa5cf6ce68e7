"""Ending a run without the LLM calls whose result is known already.

The ``Context`` fields ``stop_at_final``, ``close_early``, ``check_on`` and ``compose_supported``.

Each SearChain question costs its LLM calls, and on a laptop each call costs seconds: the prompt's
new tokens are computed at about 35 a second on two cores, and each generated token at about 10.
Four calls, or parts of calls, say nothing that the run does not know already:

* **The chain's own final content** (``stop_at_final``). With ``tracing="reader"`` or
  ``"reader_confirmed"`` the final answer is read from the path's passages, not from the
  ``[Final Content]`` the LLM writes at the end of every Chain-of-Query (40-60 tokens each round).
  The reply is stopped at :data:`FINAL_MARKER`; a chain without final content is a whole chain.
* **The round after IR changed the chain's last node** (``close_early``). The LLM answers the
  feedback by writing its chain again, with IR's answer in that node and nothing after it to
  change. The path already holds every node, so the round is not asked for: the run goes on to the
  tracing (:func:`closes_chain`).
* **The round after IR corrected a node that no later node builds on** (``check_on``). A new round
  exists to let the LLM rewrite what follows a corrected answer. When no later query names the
  answer IR replaced (a comparison's second date, a detail asked about the question's own entity),
  the LLM writes the same later queries again: IR keeps its correction on the path and checks the
  later nodes in the same round (:func:`builds_on`). Only corrections: an unsolved node's later
  queries may stand on what it did not know.
* **The tracing call when IR stands behind every step** (``compose_supported``). When the path
  reaches the chain's end, every step's answer is IR's own or holds the reader's *g*
  (:func:`~searchain_graph.method.adaptations.tracing_passages.confirmed`) and the chain concluded
  with its last node's answer, the final content is composed from the path with the path's last
  answer (IR's, where IR changed the last node)
  (:func:`supported_answer`). A chain that concluded otherwise (a comparison of dates, a last node
  that checks a detail), or a question with two options or a yes/no answer, is still traced. With
  ``stop_at_final`` a chain concludes nothing, so the two do not combine.

The paper's preset turns all four off: the paper's LLM writes the final content, answers every
feedback, and traces every path. The tuned preset turns ``stop_at_final``, ``close_early`` and
``check_on`` on:
stopping at the final content saves more generated tokens than composing saves calls (composing
applies to about one path in ten), and cost no accuracy on the choose questions it was measured on
(``docs/method.md``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from searchain_graph.method.adaptations.date_order import date_order_of
from searchain_graph.method.adaptations.options import question_options
from searchain_graph.method.adaptations.tracing_passages import confirmed
from searchain_graph.method.parsing import (
    answer_contains,
    content_words,
    extract_final_answer,
    trim_answer,
)
from searchain_graph.method.state import Branch, ChainNode, Reference

__all__ = ["FINAL_MARKER", "asks_for_last_answer", "builds_on", "closes_chain", "supported_answer"]

FINAL_MARKER = "[Final Content]"
"""Where ``stop_at_final`` stops a Chain-of-Query reply."""

_YES_NO = re.compile(
    r"^\s*(?:are|is|was|were|do|does|did|has|have|had|can|could|will|would|should|shall|may|might)\b", re.I
)


def asks_for_last_answer(question: str) -> bool:
    """Whether the question's answer is what its chain's last step finds.

    Not so for a question that offers two options ("..., A or B?"), asks an order in time, or asks
    yes or no ("Are both ...?"): its answer compares the steps.
    """
    return question_options(question) is None and date_order_of(question) is None and not _YES_NO.match(question)


def closes_chain(chain: Sequence[ChainNode], node: int, question: str) -> bool:
    """Whether IR's change to ``node`` leaves nothing for a new round to do (``close_early``).

    So it is when ``node`` is the chain's last node (no later node used the answer IR replaced)
    and the question's answer is the last step's (:func:`asks_for_last_answer`).
    """
    return bool(chain) and node == chain[-1]["index"] and asks_for_last_answer(question)


def builds_on(chain: Sequence[ChainNode], node: int, answer: str) -> bool:
    """Whether a node after ``node`` builds on its ``answer``: its query names a content word of it.

    An answer without a content word ("Yes.") counts as built on.
    """
    words = content_words(answer)
    later = [n for n in chain if n["index"] > node]
    return not words or any(words & content_words(n["query"]) for n in later)


def supported_answer(path: Sequence[Reference], branch: Branch | None, question: str) -> str | None:
    """The final answer when IR stands behind every step of the path (``compose_supported``), else None.

    The path must reach the newest chain's end: each of its nodes checked (none left unreached
    after a change, none kept unsolved). The chain must conclude with its last node's answer (as
    the LLM wrote it, or as the path keeps it): a chain whose last node is not what the question
    asks (a comparison's dates, a check of a detail) concludes otherwise, and is traced. The answer
    is the path's last step's, IR's where IR changed it: the reader's *g* where it confirmed the
    LLM's longer answer, else the answer kept.
    """
    if not path or branch is None or not asks_for_last_answer(question):
        return None
    concluded = extract_final_answer(branch.get("final_content"))
    nodes = branch.get("nodes") or []
    written = [path[-1]["answer"], *([nodes[-1].get("answer") or ""] if nodes else [])]
    if not concluded or not any(
        w and (answer_contains(concluded, w) or answer_contains(w, concluded)) for w in written
    ):
        return None
    checks = branch.get("checks") or []
    if not checks or any(c.get("action") in ("not_reached", "unsolved_kept", "no_passage") for c in checks):
        return None
    last = path[-1]
    ends = checks[-1].get("duplicate_of") or checks[-1]  # the chain's last node, or the node it repeats
    if ends.get("query") != last["query"] or not all(confirmed(ref) for ref in path):
        return None
    g = (last.get("reader_answer") or "").strip()
    shown = g if g and last.get("source") == "llm" and answer_contains(last["answer"], g) else last["answer"]
    return trim_answer(shown) or None
