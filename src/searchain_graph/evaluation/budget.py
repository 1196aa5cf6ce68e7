"""Replies the token budget cut: which records show one, and the report's section on them.

Every method shares one generation budget per LLM call (``--max-new-tokens``; 256 for local
models). A one-call method whose reply runs out of it before "the answer is" is scored on a guess
from its first line: Qwen2.5-Coder-1.5B's Chain-of-Thought on StrategyQA enumerates "several
factors: 1. ..." and is cut so on about one question in five. The report counts these per method,
so that a baseline's figure that is a floor reads as one.

A record says so itself when its run warned :data:`~searchain_graph.baselines.driver.CUT_BEFORE_ANSWER`.
Records written before that warning existed are judged from what they kept: one LLM call, its
output tokens at the budget (the record's ``max_new_tokens``; a local model's default when the
record names none), and no "the answer is" in the reply (for SearChain w/o IR's one Chain-of-Query,
no ``[Final Content]``: its answer is then taken from the last node).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from searchain_graph.baselines.common import states_answer
from searchain_graph.baselines.driver import CUT_BEFORE_ANSWER
from searchain_graph.evaluation.comparisons import correct, kept, section
from searchain_graph.llms.chat_model import DEFAULT_MAX_NEW_TOKENS

__all__ = ["budget_of", "cut_before_answer", "cut_section"]


def budget_of(record: dict[str, Any]) -> int | None:
    """The generation budget per call the record ran with, or ``None`` where it cannot be known.

    A record names it (``max_new_tokens``) since the harness keeps it; before that, a local model
    (the record names its ``llm_backend``) ran with :data:`DEFAULT_MAX_NEW_TOKENS`.
    """
    budget = record.get("max_new_tokens")
    if isinstance(budget, int) and not isinstance(budget, bool) and budget > 0:
        return budget
    return DEFAULT_MAX_NEW_TOKENS if budget is None and record.get("llm_backend") else None


def cut_before_answer(record: dict[str, Any]) -> bool:
    """The record's one reply was cut by the token budget before it stated an answer.

    A record without text (:func:`~searchain_graph.evaluation.harness.without_text`) keeps the
    verdict it was written with.
    """
    if (verdict := kept(record, "cut_before_answer")) is not None:
        return bool(verdict)
    if any(CUT_BEFORE_ANSWER in str(w) for w in record.get("warnings") or []):
        return True
    usage = record.get("usage") or {}
    budget = budget_of(record)
    tokens = usage.get("output_tokens")
    return (
        usage.get("llm_calls") == 1
        and budget is not None
        and isinstance(tokens, int)
        and tokens >= budget
        and not _states_answer(str(record.get("final_content") or ""))
    )


def _states_answer(reply: str) -> bool:
    """A free reply says "the answer is"; a Chain-of-Query (SearChain w/o IR's one call) reaches ``[Final Content]``."""
    return states_answer(reply) or "[final content]" in reply.lower()


def cut_section(records: Sequence[dict[str, Any]], datasets: Sequence[str], methods: Sequence[str]) -> list[str]:
    """Per dataset and method with any, the replies cut before an answer, and how many were still right."""
    rows = []
    for dataset in datasets:
        for method in methods:
            rs = [r for r in records if r["dataset"] == dataset and r["method"] == method]
            cut = [r for r in rs if cut_before_answer(r)]
            if not cut:
                continue
            budgets = sorted({str(budget_of(r)) for r in cut})
            right = sum(1 for r in rs if correct(r))
            cut_right = sum(1 for r in cut if correct(r))
            rows.append(
                f"| {dataset} | {method} | {len(rs)} | {', '.join(budgets)} | {len(cut)} | {cut_right} | "
                f"{100 * right / len(rs):.1f} | {100 * (right - cut_right) / max(1, len(rs) - len(cut)):.1f} |"
            )
    return section(
        "## Replies cut by the token budget before an answer",
        rows,
        "One LLM call that used the whole generation budget (tokens a call) and stated no answer (no",
        '"the answer is", or a Chain-of-Query with no [Final Content]): its answer is a guess from the',
        "reply's first line or last node, so the method's cover-EM is a floor. The last",
        "column is cover-EM on the questions whose reply was not cut (not a figure to compare: the",
        "cut questions are the hard ones for the method).",
        "",
        "| dataset | method | questions | budget | cut | right among cut | cover-EM | cover-EM, uncut |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    )
