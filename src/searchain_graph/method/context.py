"""Settings of the SearChain graph: the typed settings of a run, and the per-run overrides.

:class:`SearChainSettings` holds every decision's setting, fully typed and checked, frozen:
the graph's steps, :func:`~searchain_graph.method.verdict.ir_verdict`, the oracle-chain
benchmark and the calibration all take one. The factory
:func:`~searchain_graph.create_searchain_graph` resolves its arguments (and the reader's
defaults) into one; a caller overrides any field per run with a :class:`SearChainContext`
(LangGraph's ``context_schema``)::

    graph.invoke({"question": q}, context=SearChainContext(max_rounds=3))

A context field left at ``None`` takes the factory's value (:meth:`SearChainContext.resolve`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Literal

from searchain_graph.method.layouts import check_layout

Task = Literal["multihop", "yesno", "fact", "longform", "slot_filling"]
"""The task families of the paper, each with its own CoQ prompt (Figures 9-12)."""

TASKS: tuple[str, ...] = ("multihop", "yesno", "fact", "longform", "slot_filling")

CONTINUATIONS: tuple[str, ...] = ("fresh", "path")
"""How a later round's reply begins, after IR's feedback.

* ``"fresh"``: the paper's. The LLM answers the correction or completion prompt with a new reply,
  which may restart the chain at ``[Query 1]``, and may repeat the node IR changed with the answer
  IR rejected (a take-back: Qwen2.5-Coder-1.5B did so on 10-25 of 100 questions per dataset).
* ``"path"``: the reply is begun for the LLM with the verified ``[Query i]``/``[Answer i]`` pairs
  (*R*, the tracing's pairs), the node IR corrected or completed last with IR's answer, and the LLM
  continues it from the next node. Needs a chat model that continues a final assistant message:
  the local models do (``continue_final_message``); an OpenAI-compatible server may not.
"""

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


DEFAULT_THRESHOLD = 1.5
"""θ of the paper (Section 4.1): the DPR reader must be this confident to overrule the LLM."""


@dataclass(frozen=True, kw_only=True)
class SearChainSettings:
    """The resolved settings of a SearChain run: one value, of one type, for every decision.

    Raises:
        ValueError: a field is out of range or of the wrong type; the message names the field.
    """

    max_rounds: int = 5
    """Most LLM-IR interaction rounds (the paper's r_max = 5)."""
    confidence_threshold: float = DEFAULT_THRESHOLD
    """θ: IR corrects an answer only when the reader's confidence f > θ."""
    rouge_threshold: float = 0.35
    """α: a long-form answer is inconsistent with its passage when ROUGE-L < α."""
    task: str = "multihop"
    """The task family (normalised: one of :data:`TASKS`)."""
    verification: bool = True
    """Verification runs (False: the paper's 'w/o Verification')."""
    completion: bool = True
    """Completion runs (False: the paper's 'w/o Completion')."""
    verify_yes_no: bool = True
    """Verification checks yes/no answers too (False for readers that cannot answer yes or no)."""
    max_question_chars: int = 2000
    """Longer questions are refused."""
    demonstrations: str = "instruction"
    """Where the prompts' worked examples go: ``"instruction"`` (the paper's: inside the one user
    message) or ``"turns"`` (as earlier turns of the chat); see
    :data:`~searchain_graph.method.layouts.DEMONSTRATION_LAYOUTS`."""
    continuation: str = "fresh"
    """How a later round's reply begins: ``"fresh"`` (the paper's: after the feedback the LLM writes
    its reply from nothing) or ``"path"`` (the reply is begun with the verified pairs, *R*, the node
    fed back last, and the LLM continues it); see :data:`CONTINUATIONS`."""

    def __post_init__(self) -> None:
        for name in ("max_rounds", "max_question_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("confidence_threshold", "rouge_threshold"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if not 0.0 <= self.rouge_threshold <= 1.0:
            raise ValueError(f"rouge_threshold must lie in [0, 1], got {self.rouge_threshold!r}")
        for name in ("verification", "completion", "verify_yes_no"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        if not isinstance(self.task, str):
            raise ValueError(f"task must be a string, got {self.task!r}")
        object.__setattr__(self, "task", normalize_task(self.task))
        check_layout(self.demonstrations)
        if self.continuation not in CONTINUATIONS:
            raise ValueError(f"continuation must be one of {', '.join(CONTINUATIONS)}, got {self.continuation!r}")


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
    demonstrations: str | None = field(
        default=None,
        metadata={
            "description": "Where the prompts' worked examples go: 'instruction' (the paper's layout) or "
            "'turns' (earlier turns of the chat)."
        },
    )
    continuation: str | None = field(
        default=None,
        metadata={
            "description": "How a later round's reply begins: 'fresh' (the paper's) or 'path' (begun with the "
            "verified Query/Answer pairs, the corrected node last, for the LLM to continue)."
        },
    )

    def resolve(self, defaults: SearChainSettings) -> SearChainSettings:
        """The run's settings: every field set here, the rest from ``defaults``.

        Raises:
            ValueError: a field set here is out of range; the message names the field.
        """
        values = {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}
        return replace(defaults, **values)
