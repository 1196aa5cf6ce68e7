"""The one place SearChain's settings are described: :class:`Context`.

``Context`` is LangGraph's ``context_schema`` of the graph. The factory takes one (or its fields as
keyword arguments), ``searchain ask``/``eval``/``serve`` build their options from its fields and
descriptions, and a run may bring its own::

    graph = create_searchain_graph(llm, retriever, reader, context=Context(preset="paper"))
    graph.invoke({"question": q}, context=Context(max_rounds=3))

A run's context changes the fields it sets to other than their defaults; the others keep the
graph's values (:meth:`Context.over`).

**Presets.** ``preset="paper"`` runs Section 3 as written: the paper's prompt layout, its
``DuplicateQuery`` by text, its verification rule, and the tracing output kept as the LLM wrote
it. ``preset="tuned"`` (the default) adds the adaptations of
:mod:`searchain_graph.method.adaptations`, each measured on development questions with the
default LLM; each has a field of its own, which wins over the preset.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar, get_args

T = TypeVar("T")

Task = Literal["multihop", "yesno", "fact", "longform", "slot_filling"]
"""The task families of the paper, each with its own CoQ prompt (Figures 9-12)."""

TASKS: tuple[str, ...] = get_args(Task)

Preset = Literal["tuned", "paper"]
PRESETS: tuple[str, ...] = get_args(Preset)

Layout = Literal["instruction", "turns", "system"]
"""Where the prompts' worked examples go (:mod:`searchain_graph.method.adaptations.turns`)."""
DuplicateRule = Literal["text", "meaning"]
TracingInput = Literal["pairs", "passages", "confirmed", "reader", "reader_confirmed"]
"""What the tracing prompt shows of each step (:mod:`searchain_graph.method.adaptations.tracing_passages`)."""
Continuation = Literal["fresh", "path"]
CONTINUATIONS: tuple[str, ...] = get_args(Continuation)

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

DEFAULT_THRESHOLD = 1.5
"""θ of the paper (Section 4.1): the DPR reader must be this confident to overrule the LLM."""

PRESET_VALUES: dict[str, dict[str, Any]] = {
    "paper": {
        "demonstrations": "instruction",
        "duplicates": "text",
        "answer_checks": False,
        "stated_answers": False,
        "chain_repair": False,
        "tracing_checks": False,
        "tracing": "pairs",
        "option_answers": False,
        "date_order": False,
        "verify_yes_no": True,
        "stop_at_final": False,
        "close_early": False,
        "check_on": False,
        "compose_supported": False,
        "continuation": "fresh",
    },
    "tuned": {
        "demonstrations": "turns",
        "duplicates": "meaning",
        "answer_checks": True,
        "stated_answers": False,  # on the choose set it lost more answers than it kept
        "chain_repair": True,
        "tracing_checks": True,
        "tracing": "reader_confirmed",
        "option_answers": True,
        "date_order": True,
        "verify_yes_no": None,  # the reader's answers_yes_no
        "stop_at_final": True,
        "close_early": True,
        "check_on": True,
        "compose_supported": False,  # a chain stopped at its final content concludes nothing to compose from
        "continuation": None,  # the model's: "path" where it continues a begun reply, else "fresh"
    },
}
"""What each preset gives the fields left at ``None``; ``verify_yes_no=None`` asks the reader."""

_PRESET_BOOLS = (
    "verify_yes_no",
    "answer_checks",
    "stated_answers",
    "chain_repair",
    "tracing_checks",
    "option_answers",
    "date_order",
    "stop_at_final",
    "close_early",
    "check_on",
    "compose_supported",
)
"""The switches a preset sets: True, False or None (the preset's)."""


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


def _setting(default: Any, description: str) -> Any:
    return field(default=default, metadata={"description": description})


@dataclass(frozen=True, kw_only=True)
class Context:
    """The settings of a SearChain graph and of each of its runs. Every field is checked once, here.

    Raises:
        ValueError: a field is out of range or of the wrong type; the message names the field.
    """

    preset: Preset = _setting(
        "tuned",
        "'tuned' (default): the paper's method with the adaptations measured best on development "
        "questions with the default LLM; 'paper': Section 3 as written. Sets every adaptation field left empty.",
    )
    max_rounds: int = _setting(5, "Most LLM-IR interaction rounds (the paper's r_max = 5).")
    confidence_threshold: float | None = _setting(
        None,
        "theta: IR corrects an answer only when the reader's confidence f > theta. Empty: the theta saved for "
        "the reader by `searchain calibrate`, else the reader's own default, else the paper's 1.5.",
    )
    rouge_threshold: float = _setting(
        0.35, "alpha: a long-form answer is inconsistent with its passage when ROUGE-L(answer, passage) < alpha."
    )
    task: str = _setting("multihop", f"Task family (selects the paper's CoQ prompt): one of {', '.join(TASKS)}.")
    verification: bool = _setting(True, "Run verification (false: the paper's 'w/o Verification' ablation).")
    completion: bool = _setting(True, "Run completion (false: the paper's 'w/o Completion' ablation).")
    max_question_chars: int = _setting(2000, "Questions longer than this are refused with a clear error.")
    continuation: Continuation | None = _setting(
        None,
        "How a later round's reply begins: 'fresh' (the paper's: the LLM replies to the feedback from nothing) "
        "or 'path' (the tuned preset's: the reply is begun with the verified Query/Answer pairs, the node IR "
        "changed last, for the LLM to continue; needs a chat model that continues a final assistant message).",
    )
    # -- the adaptations (searchain_graph.method.adaptations); empty: the preset's value ---------------
    demonstrations: Layout | None = _setting(
        None,
        "Where the prompts' worked examples go: 'instruction' (the paper's: inside the one user message), "
        "'turns' (the same words as earlier turns of the chat, which a small model copies less) or 'system' "
        "(those turns with the instruction said once, as the system message: about 100 words fewer a question).",
    )
    duplicates: DuplicateRule | None = _setting(
        None,
        "DuplicateQuery: 'text' (equal after normalisation) or 'meaning' (all-MiniLM-L6-v2 cosine >= 0.85, "
        "guarded by the kind of answer asked for).",
    )
    verify_yes_no: bool | None = _setting(
        None,
        "Verify yes/no answers too. Empty: 'paper' does; 'tuned' asks the reader (an extractive reader's span "
        "never says yes or no, so it does not).",
    )
    answer_checks: bool | None = _setting(
        None,
        "A confident g overrules the LLM only when it can answer the query (no date for a place or person) and "
        "is not the answer's own words spelled one letter apart.",
    )
    stated_answers: bool | None = _setting(
        None,
        "A confident g does not overrule an answer the question itself states (the LLM's answer is the "
        "question's words) unless g contains it. Empty: off in both presets.",
    )
    chain_repair: bool | None = _setting(
        None,
        "Repair the parsed chain before IR checks it: drop a node cut by the token budget, treat an answer that "
        "says it is unknown or copies the worked example as unsolved, complete the question when no node is left.",
    )
    tracing_checks: bool | None = _setting(
        None,
        "Check the tracing output: one that cites nothing, repeats the worked example or cites a corrected "
        "passage for a statement without its answer is replaced by content composed from the path.",
    )
    tracing: TracingInput | None = _setting(
        None,
        "What the tracing sees of each step: 'pairs' (the paper's: its query and answer), 'passages' (also the "
        "passage IR read for it, to follow where it answers otherwise), 'confirmed' (query and passage, the "
        "answer only where IR gave it or the reader found it in the passage), 'reader' (the answer read from "
        "the path's passages alone, the final content composed from the path with it; long-form answers keep "
        "'pairs') or 'reader_confirmed' (the same, with the answers IR gave or found in the passage listed).",
    )
    option_answers: bool | None = _setting(
        None,
        "A question that offers two answers ('..., A or B?') gets the option the chain links its answer to, "
        "when the answer names neither.",
    )
    date_order: bool | None = _setting(
        None,
        "A question that asks which of two options comes first or last in time ('Who was born first, A or B?') "
        "is answered from the dates IR read for each option on the path, when it has one for both.",
    )
    stop_at_final: bool | None = _setting(
        None,
        "Stop each Chain-of-Query reply where its [Final Content] begins, when the tracing reads the final answer "
        "from the path's passages ('reader', 'reader_confirmed'): the LLM's own final content is not used then. "
        "A chain that concludes nothing is always traced, so it turns compose_supported's saving off.",
    )
    close_early: bool | None = _setting(
        None,
        "No new round when IR changed only the chain's last node of a question answered by its last step: the "
        "path already holds every node, and the run goes on to the tracing.",
    )
    check_on: bool | None = _setting(
        None,
        "No new round when IR corrected a node whose replaced answer no later node's query names: IR keeps its "
        "answer on the path and goes on checking the later nodes in the same round. A completion still starts a "
        "round.",
    )
    compose_supported: bool | None = _setting(
        None,
        "No tracing call when the path reaches the chain's end and IR stands behind every step (IR gave the "
        "answer, or the reader's g is in it): the final content is composed from the path, its answer the last "
        "step's. Questions with two options or a yes/no answer still ask the LLM. Needs the chain's own final content "
        "(stop_at_final off).",
    )

    def __post_init__(self) -> None:
        _check_choice("preset", self.preset, PRESETS)
        for name in ("max_rounds", "max_question_chars"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
        for name in ("confidence_threshold", "rouge_threshold"):
            value = getattr(self, name)
            if value is None and name == "confidence_threshold":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
            object.__setattr__(self, name, float(value))
        if not 0.0 <= self.rouge_threshold <= 1.0:
            raise ValueError(f"rouge_threshold must lie in [0, 1], got {self.rouge_threshold!r}")
        for name in ("verification", "completion"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True or False, got {getattr(self, name)!r}")
        for name in _PRESET_BOOLS:
            if getattr(self, name) is not None and not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be True, False or None (the preset's), got {getattr(self, name)!r}")
        if not isinstance(self.task, str):
            raise ValueError(f"task must be a string, got {self.task!r}")
        object.__setattr__(self, "task", normalize_task(self.task))
        if self.continuation is not None:
            _check_choice("continuation", self.continuation, CONTINUATIONS)
        if self.demonstrations is not None:
            _check_choice("demonstrations", self.demonstrations, get_args(Layout))
        if self.duplicates is not None:
            _check_choice("duplicates", self.duplicates, get_args(DuplicateRule))
        if self.tracing is not None:
            _check_choice("tracing", self.tracing, get_args(TracingInput))

    @property
    def given(self) -> frozenset[str]:
        """The fields this context was built with (``Context(max_rounds=5).given == {"max_rounds"}``)."""
        return frozenset(getattr(self, "_given", ()))

    def over(self, base: Context) -> Context:
        """This run's context over the graph's: every field it was built with wins, whatever its value.

        A context from a request (``{"max_rounds": 3}``) thus changes only what it names; one that
        names a field at its default value (``{"max_rounds": 5}`` over a graph built with 1) sets it.
        """
        return replace(base, **{name: getattr(self, name) for name in self.given})

    def resolved(self, *, threshold: float, reader_yes_no: bool, continues: bool = False) -> Context:
        """Every empty field filled: from the preset, θ from ``threshold``, ``verify_yes_no`` from the reader.

        ``continues``: the chat model continues a reply begun for it (a final assistant message), so
        the tuned preset begins later rounds' replies with the verified path (``continuation="path"``).
        The graph's steps only ever see a resolved context.
        """
        asked = {"verify_yes_no": reader_yes_no, "continuation": "path" if continues else "fresh"}
        filled: dict[str, Any] = {}
        for name, value in PRESET_VALUES[self.preset].items():
            if getattr(self, name) is None:
                filled[name] = asked[name] if value is None else value
        if self.confidence_threshold is None:
            filled["confidence_threshold"] = threshold
        return replace(self, **filled)


_dataclass_init = Context.__init__


def _init_remembering(self: Context, **values: Any) -> None:
    _dataclass_init(self, **values)
    object.__setattr__(self, "_given", frozenset(values))


Context.__init__ = _init_remembering  # type: ignore[method-assign]


def required(value: T | None, name: str) -> T:
    """``value`` of a resolved context's field ``name``.

    Raises:
        ValueError: it is empty: the caller was given a context that :meth:`Context.resolved` did not fill.
    """
    if value is None:
        raise ValueError(f"{name} is empty: pass a resolved Context (Context.resolved, graph.reader_settings)")
    return value


def _check_choice(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
