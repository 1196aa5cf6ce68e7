"""The baselines without retrieval: CoT, direct prompting and SearChain w/o IR.

* :func:`create_cot_graph`: few-shot Chain-of-Thought (Wei et al., 2022) with Kojima et al.'s
  (2022) "Let's think step by step" cue;
* :func:`create_direct_graph`: direct prompting, the closed-book setting (IRCoT's "NoR",
  Trivedi et al., 2023);
* :func:`create_searchain_no_ir_graph`: SearChain w/o IR, one Chain-of-Query generation with
  the SearChain paper's Figure 8 prompt (Xu et al., 2024).

Each is one step that makes one LLM call (``cot_generation``, ``direct_answer``,
``coq_generation``); CoT and direct prompting use the shared
:func:`~searchain_graph.baselines.driver.one_shot` step.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodState, cot_prompt, render_examples
from searchain_graph.baselines.driver import (
    BaselineGraph,
    BaselineSettings,
    baseline_driver,
    one_node_graph,
    one_shot,
)
from searchain_graph.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    DIRECT_EXAMPLE,
    DIRECT_PROMPT,
)
from searchain_graph.method.adaptations.options import answer_as_option
from searchain_graph.method.adaptations.turns import no_ir_turns, turn_dicts
from searchain_graph.method.calls import to_messages
from searchain_graph.method.parsing import extract_final_answer, parse_chain
from searchain_graph.method.steps import Generate, StepBody

__all__ = ["create_cot_graph", "create_direct_graph", "create_searchain_no_ir_graph"]


def create_cot_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "cot",
) -> BaselineGraph:
    """Chain-of-Thought (Wei et al., 2022): two demonstrations, "Let's think step by step", no retrieval.

    Args:
        llm: Any LangChain chat model.
        task: ``multihop``, ``yesno``, ``fact``, ``longform`` or ``slot_filling`` (or a dataset
            alias such as ``strategyqa``); selects the demonstrations and the answer format.
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = 1 and the answer parsed from "So the answer is: X.".
    """
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings)

    def render(state: MethodState, settings: BaselineSettings) -> str:
        return cot_prompt(settings.task, settings.question(state["question"]))

    return one_node_graph(
        driver, "cot_generation", one_shot(render), retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )


def create_direct_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "direct",
) -> BaselineGraph:
    """Direct prompting without retrieval: two question-answer demonstrations, then the question.

    Args:
        llm: Any LangChain chat model.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (``rounds`` = 1).
    """
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings)

    def render(state: MethodState, settings: BaselineSettings) -> str:
        examples = render_examples(settings.task, lambda d, q: DIRECT_EXAMPLE.format(question=q, answer=d.answer))
        return DIRECT_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[settings.task],
            examples=examples,
            question=settings.question(state["question"]),
        )

    return one_node_graph(
        driver, "direct_answer", one_shot(render), retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )


def create_searchain_no_ir_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    demonstrations: str = "instruction",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "searchain_no_ir",
) -> BaselineGraph:
    """SearChain w/o IR: one Chain-of-Query generation with the paper's Figure 8 prompt.

    The answer is taken from the chain's ``[Final Content]`` (the whole reply when it has none)
    by :func:`~searchain_graph.method.parsing.extract_final_answer`, falling back to the chain's last
    ``[Answer]``, as SearChain does. ``final_content`` is the whole reply (the chain and its
    ``[Final Content]``), so that :func:`~searchain_graph.method.parsing.parse_chain` recovers the nodes.

    Args:
        llm: Any LangChain chat model.
        task: The task family; selects the answer normalisation (Figure 8 is one prompt for all,
            with the ``yesno``/``fact`` question suffix of Figures 9-10).
        demonstrations: Where the prompt's worked examples go, as for SearChain:
            ``"instruction"`` (the paper's layout), ``"turns"`` (earlier turns of the chat) or ``"system"``.
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (``rounds`` = 1).
    """
    settings = BaselineSettings(task, max_question_chars, demonstrations)
    driver = baseline_driver(name, llm, settings)

    def body(state: MethodState, settings: BaselineSettings) -> StepBody:
        turns = no_ir_turns(settings.question(state["question"]), settings.demonstrations)
        text = yield Generate.prompt(to_messages(turn_dicts(turns)))
        parsed = parse_chain(text)
        warnings = [f"round 1: {w}" for w in parsed.warnings]
        content = parsed.final_content or " ".join(text.split())
        answer = (
            extract_final_answer(content, settings.task)
            or (content if settings.task == "longform" else None)
            or next((n["answer"] for n in reversed(parsed.nodes) if n["answer"]), "")
        )
        if not answer:
            warnings.append("the LLM stated no answer")
        # As SearChain's tracing does, over the chain's own pairs (there is no path without IR).
        pairs = [(n["query"], n["answer"] or "") for n in parsed.nodes]
        answer, chosen = answer_as_option(state["question"], answer, pairs)
        if chosen:
            warnings.append(chosen)
        return {"final_content": text.strip(), "answer": answer, "warnings": warnings}

    return one_node_graph(
        driver, "coq_generation", body, retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )
