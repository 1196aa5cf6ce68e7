"""The SearChain paper's "Direct Retrieval" baseline: retrieve the top k with the question, then answer.

The passages are shown in IRCoT's paragraph layout ("Wikipedia Title: ..." then the text;
Trivedi et al., 2023) before the question, with two demonstrations; the graph is a
``retrieve`` node then a ``direct_answer`` node.
"""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from searchain_graph.evaluation.baselines.common import (
    MethodOutput,
    MethodState,
    _examples,
    _paragraph,
    _paragraphs,
)
from searchain_graph.evaluation.baselines.driver import _builder, _compile, _Methods, _Node, _one_shot
from searchain_graph.evaluation.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    DIRECT_RETRIEVAL_EXAMPLE,
    DIRECT_RETRIEVAL_PROMPT,
    PARAGRAPH_SEPARATOR,
)
from searchain_graph.method.state import InputState

__all__ = ["create_direct_retrieval_graph"]


def create_direct_retrieval_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    *,
    k: int = 3,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "direct_retrieval",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """The paper's "Direct Retrieval": retrieve the top ``k`` with the question, give them, answer.

    The prompt is IRCoT's paragraph layout ("Wikipedia Title: ..." then the text) with two
    demonstrations; the retriever is called with ``k=k`` when it accepts it, and its result
    is cut to ``k`` either way.

    Args:
        llm: Any LangChain chat model.
        retriever: Any LangChain retriever.
        k: Passages retrieved and shown.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the retriever and the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (``rounds`` = 1).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars, retriever=retriever)

    def retrieve(state: MethodState) -> _Node:
        update = methods.start(state)
        docs, usage = yield from methods.retrieve(update["usage"], update["question"], k, 1)
        warnings = [] if docs else ["round 1: no passage retrieved"]
        return {**update, "usage": usage, "passages": docs, "warnings": warnings}

    def render(state: MethodState, question: str) -> str:
        examples = _examples(
            methods.task,
            lambda d, q: DIRECT_RETRIEVAL_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                answer=d.answer,
            ),
        )
        return DIRECT_RETRIEVAL_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[methods.task],
            examples=examples,
            paragraphs=_paragraphs(state["passages"]),
            question=question,
        )

    builder = _builder()
    builder.add_node("retrieve", methods.node(retrieve, "retrieve"), retry_policy=retry_policy)
    builder.add_node(
        "direct_answer",
        methods.node(_one_shot(methods, "direct_answer", render), "direct_answer"),
        retry_policy=retry_policy,
    )
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "direct_answer")
    builder.add_edge("direct_answer", END)
    return _compile(builder, checkpointer, name)
