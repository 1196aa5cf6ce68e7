"""What the baselines share: their state, answer parsing, paragraphs and demonstrations.

Holds :class:`MethodOutput` and :class:`MethodState` (the output and working state of every
baseline graph), :func:`final_answer` (the task-aware short answer of a CoT, direct or Self-Ask
reply) and :func:`reasoning_steps` (the paper's Table 4 count of CoT steps), the rendering of
paragraphs in IRCoT's "Wikipedia Title:" layout (Trivedi et al., 2023;
:func:`render_paragraphs`), the deduplicating merge of retrieved passages
(:func:`merge_passages`), and the rendering of the two demonstrations of
:mod:`~searchain_graph.baselines.prompts` into each method's format
(:func:`render_examples`, :func:`cot_prompt`, :func:`self_ask_example`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, NotRequired

from typing_extensions import TypedDict

from searchain_graph.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    BASELINE_DEMONSTRATIONS,
    BASELINE_EXAMPLE_SEPARATOR,
    COT_EXAMPLE,
    COT_PROMPT,
    NO_PARAGRAPHS,
    PARAGRAPH,
    PARAGRAPH_SEPARATOR,
    SELF_ASK_EXAMPLE,
    SELF_ASK_STEP,
    Demonstration,
)
from searchain_graph.method.parsing import extract_final_answer
from searchain_graph.method.question import task_question
from searchain_graph.method.state import DocumentDict, Usage, add_usage

__all__ = [
    "ANSWER_LABEL",
    "MethodOutput",
    "MethodState",
    "cot_answer",
    "cot_examples",
    "cot_prompt",
    "final_answer",
    "merge_passages",
    "reasoning_steps",
    "render_examples",
    "render_paragraph",
    "render_paragraphs",
    "self_ask_example",
    "split_sentences",
    "states_answer",
]


class MethodOutput(TypedDict):
    """What every baseline graph returns (a common shape for evaluation)."""

    question: str
    answer: str
    """The short final answer (Yes/No for ``yesno``, SUPPORTS/REFUTES for ``fact``, a paragraph for ``longform``)."""
    final_content: str
    """The method's final text: the last reply, or the whole chain for IRCoT (CoT mode) and Self-Ask."""
    rounds: int
    """LLM-IR interaction rounds: retrievals for IRCoT, follow-ups for Self-Ask, searches for ReAct,
    hops for DSP, sub-questions for Least-to-Most, 1 + sentences verified for Verify-and-Edit, 1 for
    the others."""
    usage: Annotated[Usage, add_usage]
    """What the run cost; each step returns its own calls' cost, which the ``add_usage`` reducer sums."""
    passages: list[DocumentDict]
    """The retrieved passages the method used, deduplicated, in the order they were first used."""
    warnings: list[str]


class MethodState(MethodOutput):
    """The working state of a baseline run (plain values only: msgpack-serialisable)."""

    last_step: NotRequired[str]
    """The step that ran last (the driver's): the entry step starts a new run unless it follows
    one of the steps that lead back to it within a run."""
    messages: NotRequired[list[dict[str, str]]]
    """Self-Ask's conversation, as ``{"role", "content"}`` dicts."""
    steps: NotRequired[list[dict[str, Any]]]
    """Self-Ask's follow-ups: ``question``, ``answer``, ``source`` (reader/llm) and ``document``;
    Least-to-Most's sub-questions: ``question`` and ``answer`` (``None`` until solved)."""
    query: NotRequired[str | None]
    """The next retrieval query (Self-Ask's follow-up, IRCoT's latest sentence, ReAct's search)."""
    paragraphs: NotRequired[list[DocumentDict]]
    """IRCoT's collected paragraphs (at most ``max_paragraphs``, oldest dropped)."""
    cot: NotRequired[list[str]]
    """IRCoT's chain-of-thought sentences so far; ReAct's scratchpad entries; Verify-and-Edit's
    rationale sentences to verify (only when the vote is split), then the edited ones."""
    done: NotRequired[bool]
    """The run's answer is settled: IRCoT's chain stated one (or broke off), ReAct finished,
    Least-to-Most answered the question itself."""


# -- answers and reasoning steps -------------------------------------------------------------------

_ANSWER_MARK = re.compile(r"(?:final\s+)?answer\s*(?:is\s*:?|:)", re.IGNORECASE)


def states_answer(text: str | None) -> bool:
    """``text`` states its answer in so many words ("So the answer is X.", "Answer: X")."""
    return bool(_ANSWER_MARK.search(text or ""))


ANSWER_LABEL = re.compile(r"^\s*(?:A|Answer|Final answer)\s*:\s*", re.IGNORECASE)
"""An "A:", "Answer:" or "Final answer:" label at the start of a line."""
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def final_answer(text: str | None, task: str) -> str:
    """The short answer stated in ``text`` (a CoT, a direct reply or a Self-Ask ending).

    "... answer is X" wins (:func:`~searchain_graph.method.parsing.extract_final_answer`); otherwise the
    first line of a direct reply, without an "A:"/"Answer:" label. ``yesno`` answers are reduced to
    ``Yes``/``No`` and ``fact`` answers to ``SUPPORTS``/``REFUTES`` whenever the text states one;
    ``longform`` answers keep the whole paragraph after the last "answer is".
    """
    text = (text or "").strip()
    if not text:
        return ""
    marks = list(_ANSWER_MARK.finditer(text))
    if task == "longform":
        return " ".join((text[marks[-1].end() :] if marks else ANSWER_LABEL.sub("", text)).split())
    if marks or task == "fact":
        found = extract_final_answer(text, task)
        if found:
            return found
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = ANSWER_LABEL.sub("", line).strip(" .\"'*")
    if task == "yesno":
        match = _YES_NO.search(line)
        if match:
            return match.group(1).capitalize()
        return extract_final_answer(text, task) or line
    return line


_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(line: str) -> list[str]:
    """The sentences of one line of text, split at ". ", "! " and "? " (not after an initial such as "J.")."""
    out, start = [], 0
    for match in _SENTENCE_END.finditer(line):
        out.append(line[start : match.start() + len(match.group(1))].strip())
        start = match.end()
    out.append(line[start:].strip())
    return [s for s in out if s]


def reasoning_steps(text: str) -> int:
    """Chain-of-thought steps in ``text``: its sentences, less the one that states the answer.

    This is how Table 4 counts CoT's steps (the paper's "number of reasoning steps").
    """
    lines = (" ".join(ANSWER_LABEL.sub("", ln).split()) for ln in (text or "").splitlines())
    sentences = [s for ln in lines for s in split_sentences(ln)]
    return sum(1 for s in sentences if "answer is" not in s.lower())


# -- paragraphs and demonstrations ------------------------------------------------------------------


def render_paragraph(title: str, text: str) -> str:
    """One paragraph in IRCoT's layout: "Wikipedia Title: <title>" then its text (the text alone without a title)."""
    title = " ".join(title.split())
    return PARAGRAPH.format(title=title, text=text.strip()) if title else text.strip()


def render_paragraphs(docs: Sequence[DocumentDict]) -> str:
    """Retrieved passages in IRCoT's layout, one :func:`render_paragraph` each (a note when there are none)."""
    if not docs:
        return NO_PARAGRAPHS
    return PARAGRAPH_SEPARATOR.join(
        render_paragraph(str(d["metadata"].get("title") or ""), d["page_content"]) for d in docs
    )


def _doc_key(doc: DocumentDict) -> tuple[str, ...]:
    ident = doc["metadata"].get("id")
    if ident is not None:
        return ("id", str(ident))
    return ("text", str(doc["metadata"].get("title") or ""), doc["page_content"])


def merge_passages(held: Sequence[DocumentDict], new: Sequence[DocumentDict]) -> list[DocumentDict]:
    """``held`` then the documents of ``new`` that it lacks (by ``id``, else title and text), in order."""
    out = list(held)
    keys = {_doc_key(d) for d in out}
    for doc in new:
        if _doc_key(doc) not in keys:
            keys.add(_doc_key(doc))
            out.append(doc)
    return out


def _demos(task: str) -> tuple[Demonstration, ...]:
    return BASELINE_DEMONSTRATIONS[task]


def render_examples(task: str, render: Callable[[Demonstration, str], str]) -> str:
    """The two demonstrations for ``task``, each rendered by ``render(demonstration, question)``.

    The demonstration's question is phrased for the task first (the ``yesno``/``fact`` suffix).
    """
    return BASELINE_EXAMPLE_SEPARATOR.join(render(d, task_question(d.question, task)) for d in _demos(task))


def cot_answer(answer: str) -> str:
    """A demonstration's answer as a chain of thought ends with it ("So the answer is: X.")."""
    return answer.rstrip(" .")


def cot_examples(task: str) -> str:
    """CoT's two demonstrations for ``task`` (CoT, CoT-SC, Verify-and-Edit's edited answer)."""
    return render_examples(
        task,
        lambda d, q: COT_EXAMPLE.format(question=q, reasoning=" ".join(d.reasoning), answer=cot_answer(d.answer)),
    )


def cot_prompt(task: str, question: str) -> str:
    """CoT's few-shot prompt for ``question`` (already phrased for the task): CoT, CoT-SC, ReAct's backoff."""
    return COT_PROMPT.format(
        answer_format=BASELINE_ANSWER_FORMATS[task], examples=cot_examples(task), question=question
    )


def self_ask_example(d: Demonstration, question: str) -> str:
    """One Self-Ask demonstration: its follow-ups with their intermediate answers, then the answer."""
    steps = "\n".join(SELF_ASK_STEP.format(question=fq, answer=fa) for fq, fa in d.follow_ups)
    return SELF_ASK_EXAMPLE.format(question=question, follow_ups=steps, answer=d.answer)
