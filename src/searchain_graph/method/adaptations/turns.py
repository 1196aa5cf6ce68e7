"""Where a prompt's worked examples go: inside the instruction (the paper's layout), or as chat turns.

The paper's prompts (:mod:`searchain_graph.method.prompts`) put their demonstrations inside the one
user message, after ``For example:``. A small model (Qwen2.5-Coder-1.5B) then copies the
demonstration's answer into unrelated questions. The ``"turns"`` layout keeps the paper's words but
makes each demonstration a finished exchange: a user turn (the instruction, asking the
demonstration's question) and an assistant turn (its chain), before the instruction for the
question itself. The ``"system"`` layout says the instruction once, as the system message, and asks
each question (the demonstrations' and then the real one) as a bare ``[Question]`` turn: the same
exchanges with about 100 words fewer a question. Every function returns chat turns,
``(role, text)`` pairs; the paper's layout is one user turn, byte-identical to the paper's prompt.
"""

from __future__ import annotations

import re
from typing import get_args

from searchain_graph.method.context import Layout
from searchain_graph.method.prompts import (
    COQ_PARTS,
    COQ_PROMPT_NO_IR,
    COQ_PROMPTS,
    NO_IR_PARTS,
    QUESTION_CUE,
    TRACING_EXAMPLE,
    TRACING_INSTRUCTION,
)

__all__ = [
    "DEMONSTRATION_LAYOUTS",
    "Turn",
    "check_layout",
    "coq_turns",
    "demonstrations",
    "no_ir_turns",
    "tracing_turns",
    "turn_dicts",
    "without_question",
]

DEMONSTRATION_LAYOUTS: tuple[str, ...] = get_args(Layout)
"""How a prompt carries its worked examples.

* ``"instruction"``: the paper's layout. One user message holds the instruction, ``For example:``,
  the demonstrations and the question.
* ``"turns"``: the same words as earlier turns of the chat. Each demonstration is a user turn (the
  instruction, for the demonstration's question) and an assistant turn (its chain); then the
  instruction for the question itself. A small model that copies a demonstration's answer into an
  unrelated question is less likely to when the demonstration is a finished exchange.
* ``"system"``: the exchanges of ``"turns"``, with the instruction said once, as the system message
  (its ``"{question}"`` dropped), and each user turn only the ``[Question]`` line.
"""

Turn = tuple[str, str]
"""One chat turn: ``("system" | "user" | "assistant", text)``."""


def turn_dicts(turns: list[Turn]) -> list[dict[str, str]]:
    """Turns as the ``{"role", "content"}`` messages the graph's state keeps."""
    return [{"role": role, "content": text} for role, text in turns]


def demonstrations(examples: str) -> list[tuple[str, str]]:
    """The worked examples of a prompt: ``(question, chain)`` each, in the prompt's order.

    ``examples`` is a block of demonstrations separated by blank lines, each starting with its
    ``[Question]: "..."`` line.
    """
    out = []
    for block in examples.strip().split("\n\n"):
        first, _, chain = block.partition("\n")
        match = re.fullmatch(r'\[Question\]: "(.*)"', first.strip())
        if match is None:
            raise ValueError(f"a demonstration must start with its [Question] line, got {first[:80]!r}")
        out.append((match.group(1), chain.strip()))
    return out


def without_question(instruction: str) -> str:
    """``instruction`` with its quoted ``"{question}"`` dropped, for the ``"system"`` layout.

    ``... complex [Question] : "{question}" You should ...`` becomes ``... complex [Question]. You
    should ...``; ``... [Question]:"{question}" and answer ...`` becomes ``... [Question] and answer ...``.
    """
    return re.sub(
        r'\s*:\s*"\{question\}"\s*(?=(\S))', lambda m: ". " if m.group(1).isupper() else " ", instruction
    ).strip()


def _as_turns(instruction: str, examples: str, question: str, layout: str = "turns") -> list[Turn]:
    """The ``"turns"`` or ``"system"`` layout of ``instruction`` + ``examples`` + the question cue."""
    ask = instruction.removesuffix("For example:\n")
    if layout == "system":
        turns: list[Turn] = [("system", without_question(ask))]
        for demo_question, chain in demonstrations(examples):
            turns += [("user", QUESTION_CUE.format(question=demo_question).strip()), ("assistant", chain)]
        return [*turns, ("user", QUESTION_CUE.format(question=question).strip())]
    turns = []
    for demo_question, chain in demonstrations(examples):
        turns.append(("user", ask.format(question=demo_question) + QUESTION_CUE.format(question=demo_question)))
        turns.append(("assistant", chain))
    turns.append(("user", ask.format(question=question) + QUESTION_CUE.format(question=question)))
    return turns


def check_layout(layout: str) -> str:
    """``layout`` if it is one of :data:`DEMONSTRATION_LAYOUTS`.

    Raises:
        ValueError: it is not; the message names the layouts.
    """
    if layout not in DEMONSTRATION_LAYOUTS:
        raise ValueError(f"demonstrations must be one of {', '.join(DEMONSTRATION_LAYOUTS)}, got {layout!r}")
    return layout


def coq_turns(task: str, question: str, layout: str = "instruction") -> list[Turn]:
    """The first-round CoQ prompt (with IR) for ``question``, as chat turns in ``layout``.

    Args:
        task: A task family of :data:`COQ_PROMPTS`.
        question: The question as the prompt asks it (with the task's suffix).
        layout: One of :data:`DEMONSTRATION_LAYOUTS`.
    """
    if check_layout(layout) == "instruction":
        return [("user", COQ_PROMPTS[task].format(question=question))]
    return _as_turns(*COQ_PARTS[task], question, layout)


def no_ir_turns(question: str, layout: str = "instruction") -> list[Turn]:
    """Figure 8's prompt (SearChain w/o IR) for ``question``, as chat turns in ``layout``."""
    if check_layout(layout) == "instruction":
        return [("user", COQ_PROMPT_NO_IR.format(question=question))]
    return _as_turns(*NO_IR_PARTS, question, layout)


def tracing_turns(
    question: str,
    pairs: str,
    layout: str = "instruction",
    *,
    instruction: str = TRACING_INSTRUCTION,
    example: str = TRACING_EXAMPLE,
) -> list[Turn]:
    """The tracing prompt for ``question`` over the rendered ``pairs``, as chat turns in ``layout``.

    ``instruction`` and ``example`` default to the paper's tracing prompt (``TRACING_PROMPT``);
    :mod:`.tracing_passages` passes its own.
    """
    if check_layout(layout) == "instruction":
        return [("user", f'{instruction}\nFor example:\n{example}\n[Question]: "{question}"\n{pairs}')]
    ((demo_question, chain),) = demonstrations(example)
    demo_pairs, _, final = chain.partition("[Final Content]")
    if layout == "system":
        return [
            ("system", instruction),
            ("user", QUESTION_CUE.format(question=demo_question).lstrip() + demo_pairs.strip()),
            ("assistant", "[Final Content]" + final),
            ("user", QUESTION_CUE.format(question=question).lstrip() + pairs),
        ]
    return [
        ("user", instruction + QUESTION_CUE.format(question=demo_question) + demo_pairs.strip()),
        ("assistant", "[Final Content]" + final),
        ("user", instruction + QUESTION_CUE.format(question=question) + pairs),
    ]
