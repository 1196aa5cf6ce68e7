"""Baselines that vote over several sampled paths: CoT-SC and Recite-and-Answer, no retrieval.

* :func:`create_cot_sc_graph`: self-consistency (Wang et al., ICLR 2023): CoT's prompt sampled
  ``samples`` times, the most frequent answer wins;
* :func:`create_recite_graph`: Recite-and-Answer (Sun et al., ICLR 2023): the model recites a
  passage from memory, then answers from it; with ``paths`` > 1, several sampled recitations,
  each answered, and a vote (their "multiple-path" recitation).

A path is sampled with ``temperature`` and, where the model takes one, ``seed`` = its index, so a
run is reproducible (:func:`~searchain_graph.baselines.driver.sampling_options`).
Answers are compared after :func:`~searchain_graph.method.parsing.normalize_answer` (cover-EM's
normalisation); a tie goes to the answer reached first. Each path is its own traced LLM call
(``cot_sample``, ``recitation``, ``recite_answer``), numbered by ``searchain_round``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Generator, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodState, cot_prompt, final_answer, render_examples
from searchain_graph.baselines.driver import (
    BaselineGraph,
    BaselineSettings,
    baseline_driver,
    one_node_graph,
    sampling_options,
)
from searchain_graph.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    RECITE_ANSWER_EXAMPLE,
    RECITE_ANSWER_PROMPT,
    RECITE_EXAMPLE,
    RECITE_PROMPT,
)
from searchain_graph.method.parsing import normalize_answer
from searchain_graph.method.steps import Generate, Request, StepBody

__all__ = [
    "check_paths",
    "create_cot_sc_graph",
    "create_recite_graph",
    "majority",
    "sampled_chains",
    "voted_chains",
]


def majority(answers: Sequence[str]) -> tuple[int | None, int]:
    """The index of the first answer of the most frequent (normalised, non-empty) kind, and its count.

    ``(None, 0)`` when no answer is non-empty.
    """
    keys = [normalize_answer(a) if a.strip() else "" for a in answers]
    counts = Counter(k for k in keys if k)
    if not counts:
        return None, 0
    top = max(counts.values())
    first = next(i for i, k in enumerate(keys) if k and counts[k] == top)
    return first, top


def check_paths(n: int, temperature: float, what: str) -> None:
    """Refuse fewer than one path, and several paths that could not differ (``temperature`` <= 0)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"{what} must be >= 1, got {n!r}")
    if n > 1 and temperature <= 0:
        raise ValueError(f"{what} > 1 needs temperature > 0 (greedy paths would all be the same)")


def _voted(update: dict[str, Any], texts: list[str], answers: list[str]) -> dict[str, Any]:
    winner, votes = majority(answers)
    warnings: list[str] = list(update.get("warnings") or [])
    if winner is None:
        warnings.append("no sampled path stated an answer")
        content, answer = (texts[0] if texts else ""), ""
    else:
        content, answer = texts[winner], answers[winner]
        if len(texts) > 1:
            warnings.append(f"{votes} of {len(texts)} paths agree on the answer")
    return {**update, "final_content": content.strip(), "answer": answer, "warnings": warnings}


def sampled_chains(
    llm: BaseChatModel, settings: BaselineSettings, question: str, samples: int, temperature: float
) -> Generator[Request, Any, list[str]]:
    """CoT's prompt for ``question``, sampled ``samples`` times (greedy once when 1): the chains.

    Requests for a step (``yield from``); ``llm`` only decides whether a path gets a ``seed``.
    Each call is ``cot_sample``, its ``searchain_round`` the path's number.
    """
    prompt, texts = cot_prompt(settings.task, settings.question(question)), []
    for i in range(samples):
        options = sampling_options(llm, temperature, i) if samples > 1 else None
        texts.append((yield Generate.prompt(prompt, options=options, step="cot_sample", round=i + 1)))
    return texts


def voted_chains(
    llm: BaseChatModel,
    settings: BaselineSettings,
    update: dict[str, Any],
    question: str,
    samples: int,
    temperature: float,
) -> Generator[Request, Any, tuple[dict[str, Any], list[str]]]:
    """CoT-SC: CoT's chains sampled and voted on; ``update`` with the vote added, and the chains' answers.

    The vote sets ``final_content`` (the first chain stating the winning answer), ``answer`` and
    ``warnings`` (``update``'s, plus how many paths agree).
    """
    texts = yield from sampled_chains(llm, settings, question, samples, temperature)
    answers = [final_answer(t, settings.task) for t in texts]
    return _voted(update, texts, answers), answers


def create_cot_sc_graph(
    llm: BaseChatModel,
    *,
    samples: int = 5,
    temperature: float = 0.7,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "cot_sc",
) -> BaselineGraph:
    """CoT with self-consistency (Wang et al., 2023): ``samples`` sampled chains, a majority vote.

    Each chain is CoT's prompt (:func:`~searchain_graph.baselines.create_cot_graph`)
    sampled at ``temperature`` (Wang et al.: T = 0.7, top-k 40 for their open models); the answer
    stated most often (after normalisation) wins, and ``final_content`` is the first chain that
    states it. ``samples`` LLM calls, no retrieval, ``rounds`` = 1.

    Args:
        llm: Any LangChain chat model that takes ``temperature`` per call.
        samples: Chains sampled (the ReAct paper's CoT-SC backoff used 21; 5 keeps it affordable).
        temperature: Sampling temperature (> 0 when ``samples`` > 1).
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput`.
    """
    check_paths(samples, temperature, "samples")
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings)

    def body(state: MethodState, settings: BaselineSettings) -> StepBody:
        update = {"warnings": state["warnings"]}
        out, _ = yield from voted_chains(llm, settings, update, state["question"], samples, temperature)
        return out

    return one_node_graph(driver, "cot_sc", body, retry_policy=retry_policy, checkpointer=checkpointer, name=name)


def create_recite_graph(
    llm: BaseChatModel,
    *,
    paths: int = 1,
    temperature: float = 0.7,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "recite",
) -> BaselineGraph:
    """Recite-and-Answer (Sun et al., 2023): recite a passage from memory, then answer from it.

    Two calls a path: the recitation (demonstrations recite their supporting paragraphs), then
    the answer read from it. With ``paths`` > 1 the recitations are sampled at ``temperature``
    and the answers voted on, as in Sun et al.'s multiple-path recitation; the default, one
    greedy path, is their single-path setting. No retrieval; ``rounds`` = 1.

    Args:
        llm: Any LangChain chat model.
        paths: Recitations (each answered).
        temperature: Sampling temperature of the recitations when ``paths`` > 1.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` whose
        ``final_content`` is the winning recitation and its answer.
    """
    check_paths(paths, temperature, "paths")
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings)
    fmt = BASELINE_ANSWER_FORMATS

    def recited(d: Any) -> str:
        return " ".join(text for _, text in d.paragraphs)

    def body(state: MethodState, settings: BaselineSettings) -> StepBody:
        question = settings.question(state["question"])
        recite = RECITE_PROMPT.format(
            examples=render_examples(
                settings.task, lambda d, q: RECITE_EXAMPLE.format(question=q, recitation=recited(d))
            ),
            question=question,
        )
        answer_examples = render_examples(
            settings.task,
            lambda d, q: RECITE_ANSWER_EXAMPLE.format(recitation=recited(d), question=q, answer=d.answer),
        )
        texts, answers = [], []
        for i in range(paths):  # each path is a round of its calls' trace
            options = sampling_options(llm, temperature, i) if paths > 1 else None
            recitation = yield Generate.prompt(
                recite, stop=["\nQuestion:"], options=options, step="recitation", round=i + 1
            )
            recitation = " ".join(recitation.split()) or "(nothing recited)"
            answer_prompt = RECITE_ANSWER_PROMPT.format(
                answer_format=fmt[settings.task], examples=answer_examples, recitation=recitation, question=question
            )
            reply = yield Generate.prompt(answer_prompt, step="recite_answer", round=i + 1)
            texts.append(f"Recitation: {recitation}\nAnswer: {reply.strip()}")
            answers.append(final_answer(reply, settings.task))
        return _voted({"warnings": state["warnings"]}, texts, answers)

    return one_node_graph(
        driver, "recite_and_answer", body, retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )
