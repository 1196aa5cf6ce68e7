"""The baselines without retrieval: CoT, direct prompting and SearChain w/o IR.

* :func:`create_cot_graph`: few-shot Chain-of-Thought (Wei et al., 2022) with Kojima et al.'s
  (2022) "Let's think step by step" cue;
* :func:`create_direct_graph`: direct prompting, the closed-book setting (IRCoT's "NoR",
  Trivedi et al., 2023);
* :func:`create_searchain_no_ir_graph`: SearChain w/o IR, one Chain-of-Query generation with
  the SearChain paper's Figure 8 prompt (Xu et al., 2024).

Each is one LLM call in one node (``cot_generation``, ``direct_answer``, ``coq_generation``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from searchain_graph.evaluation.baselines.common import MethodOutput, MethodState, _cot_prompt, _examples
from searchain_graph.evaluation.baselines.driver import _Methods, _Node, _one_node, _one_shot
from searchain_graph.evaluation.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    DIRECT_EXAMPLE,
    DIRECT_PROMPT,
)
from searchain_graph.method.parsing import extract_final_answer, parse_chain
from searchain_graph.method.prompts import COQ_PROMPT_NO_IR
from searchain_graph.method.state import InputState

__all__ = ["create_cot_graph", "create_direct_graph", "create_searchain_no_ir_graph"]


def _single_node_graph(
    methods: _Methods,
    step: str,
    render: Callable[[MethodState, str], str],
    *,
    retry_policy: RetryPolicy | None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None,
    name: str,
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    return _one_node(methods, step, _one_shot(methods, step, render), retry_policy, checkpointer, name)


def create_cot_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "cot",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
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
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars)

    def render(state: MethodState, question: str) -> str:
        return _cot_prompt(methods.task, question)

    return _single_node_graph(
        methods, "cot_generation", render, retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )


def create_direct_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "direct",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
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
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars)

    def render(state: MethodState, question: str) -> str:
        examples = _examples(methods.task, lambda d, q: DIRECT_EXAMPLE.format(question=q, answer=d.answer))
        return DIRECT_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[methods.task], examples=examples, question=question
        )

    return _single_node_graph(
        methods, "direct_answer", render, retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )


def create_searchain_no_ir_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "searchain_no_ir",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """SearChain w/o IR: one Chain-of-Query generation with the paper's Figure 8 prompt.

    The answer is taken from the chain's ``[Final Content]`` (the whole reply when it has none)
    by :func:`~searchain_graph.method.parsing.extract_final_answer`, falling back to the chain's last
    ``[Answer]``, as SearChain does. ``final_content`` is the whole reply (the chain and its
    ``[Final Content]``), so that :func:`~searchain_graph.method.parsing.parse_chain` recovers the nodes.

    Args:
        llm: Any LangChain chat model.
        task: The task family; selects the answer normalisation (Figure 8 is one prompt for all,
            with the ``yesno``/``fact`` question suffix of Figures 9-10).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (``rounds`` = 1).
    """
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars)
    step = "coq_generation"

    def body(state: MethodState) -> _Node:
        update = methods.start(state)
        prompt = COQ_PROMPT_NO_IR.format(question=methods.question(update["question"]))
        text, usage = yield from methods.generate(update["usage"], prompt, step, 1)
        parsed = parse_chain(text)
        warnings = [f"round 1: {w}" for w in parsed.warnings]
        content = parsed.final_content or " ".join(text.split())
        answer = (
            extract_final_answer(content, methods.task)
            or (content if methods.task == "longform" else None)
            or next((n["answer"] for n in reversed(parsed.nodes) if n["answer"]), "")
        )
        if not answer:
            warnings.append("the LLM stated no answer")
        return {
            **update,
            "usage": usage,
            "rounds": 1,
            "final_content": text.strip(),
            "answer": answer,
            "warnings": warnings,
            "pending": False,
        }

    return _one_node(methods, step, body, retry_policy, checkpointer, name)
