"""Runtime knobs of the SearChain graph (LangGraph's ``context_schema``).

The factory :func:`~searchain_graph.create_searchain_graph` fixes the defaults;
a caller overrides any of them per run::

    graph.invoke({"question": q}, context=SearChainContext(max_rounds=3))

A field left at ``None`` takes the value given to the factory.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Literal

Task = Literal["multihop", "yesno", "fact", "longform", "slot_filling"]
"""The task families of the paper, each with its own CoQ prompt (Figures 9-12)."""

TASKS: tuple[str, ...] = ("multihop", "yesno", "fact", "longform", "slot_filling")

TASK_ALIASES: dict[str, str] = {
    "multi-hop": "multihop",
    "multihop_qa": "multihop",
    "hotpotqa": "multihop",
    "musique": "multihop",
    "2wikimultihopqa": "multihop",
    "strategyqa": "yesno",
    "yes_no": "yesno",
    "fever": "fact",
    "fact_checking": "fact",
    "eli5": "longform",
    "long_form": "longform",
    "lfqa": "longform",
    "slot-filling": "slot_filling",
    "zsre": "slot_filling",
    "t-rex": "slot_filling",
    "trex": "slot_filling",
}


def normalize_task(task: str) -> str:
    """Return the canonical task name for ``task`` (accepting dataset names as aliases).

    Raises:
        ValueError: ``task`` names no known task family.
    """
    key = task.strip().lower()
    key = TASK_ALIASES.get(key, key)
    if key not in TASKS:
        raise ValueError(
            f"unknown task {task!r}: expected one of {', '.join(TASKS)} "
            f"(or a dataset alias: {', '.join(sorted(TASK_ALIASES))})"
        )
    return key


@dataclass(kw_only=True)
class SearChainContext:
    """Per-run settings of SearChain. ``None`` means "the value given to the factory"."""

    max_rounds: int | None = field(
        default=None,
        metadata={"description": "Most LLM-IR interaction rounds (the paper's r_max = 5)."},
    )
    confidence_threshold: float | None = field(
        default=None,
        metadata={
            "description": "theta: IR corrects an answer only when the reader's confidence f > theta "
            "(1.5 in the paper, for the DPR reader's relevance logit)."
        },
    )
    rouge_threshold: float | None = field(
        default=None,
        metadata={
            "description": "alpha: for long-form tasks an answer is inconsistent with its passage "
            "when ROUGE-L(answer, passage) < alpha (0.35 in the paper)."
        },
    )
    task: str | None = field(
        default=None,
        metadata={"description": f"Task family, one of {', '.join(TASKS)}."},
    )
    verification: bool | None = field(
        default=None,
        metadata={"description": "Run verification (False reproduces 'w/o Verification')."},
    )
    completion: bool | None = field(
        default=None,
        metadata={"description": "Run completion (False reproduces 'w/o Completion')."},
    )
    verify_yes_no: bool | None = field(
        default=None,
        metadata={
            "description": "Verify yes/no answers too. By default only a reader that can answer yes or no "
            "(answers_yes_no) does: an extractive reader's span never contains 'yes' or 'no'."
        },
    )
    max_question_chars: int | None = field(
        default=None,
        metadata={"description": "Questions longer than this are refused with a clear error."},
    )

    def merged_with(self, defaults: SearChainContext) -> SearChainContext:
        """Return a copy where every ``None`` field takes its value from ``defaults``."""
        values = {
            f.name: getattr(self, f.name) if getattr(self, f.name) is not None else getattr(defaults, f.name)
            for f in fields(self)
        }
        return SearChainContext(**values)

    def validate(self) -> SearChainContext:
        """Check every set field and return ``self`` with ``task`` normalised.

        Raises:
            ValueError: a field is out of range; the message names the field.
        """
        if self.max_rounds is not None and (not isinstance(self.max_rounds, int) or self.max_rounds < 1):
            raise ValueError(f"max_rounds must be an integer >= 1, got {self.max_rounds!r}")
        for name in ("confidence_threshold", "rouge_threshold"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float)) and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
        if self.rouge_threshold is not None and not 0.0 <= self.rouge_threshold <= 1.0:
            raise ValueError(f"rouge_threshold must lie in [0, 1], got {self.rouge_threshold!r}")
        if self.max_question_chars is not None and self.max_question_chars < 1:
            raise ValueError(f"max_question_chars must be >= 1, got {self.max_question_chars!r}")
        if self.task is not None:
            self.task = normalize_task(self.task)
        return self
