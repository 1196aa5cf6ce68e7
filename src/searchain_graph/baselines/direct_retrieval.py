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
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import (
    MethodState,
    render_examples,
    render_paragraph,
    render_paragraphs,
)
from searchain_graph.baselines.driver import (
    BaselineGraph,
    BaselineSettings,
    baseline_driver,
    compile_graph,
    graph_builder,
    one_shot,
)
from searchain_graph.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    DIRECT_RETRIEVAL_EXAMPLE,
    DIRECT_RETRIEVAL_PROMPT,
    PARAGRAPH_SEPARATOR,
)
from searchain_graph.method.steps import Retrieve, StepBody

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
) -> BaselineGraph:
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
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings, retriever=retriever)

    def retrieve(state: MethodState, settings: BaselineSettings) -> StepBody:
        (docs,) = yield Retrieve([state["question"]], k=k)
        warnings = [] if docs else ["round 1: no passage retrieved"]
        return {"passages": docs, "warnings": warnings}

    def render(state: MethodState, settings: BaselineSettings) -> str:
        examples = render_examples(
            settings.task,
            lambda d, q: DIRECT_RETRIEVAL_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(render_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                answer=d.answer,
            ),
        )
        return DIRECT_RETRIEVAL_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[settings.task],
            examples=examples,
            paragraphs=render_paragraphs(state["passages"]),
            question=settings.question(state["question"]),
        )

    builder = graph_builder()
    builder.add_node(
        "retrieve", driver.node("retrieve", retrieve, starts_run=True, opens_round=True), retry_policy=retry_policy
    )
    builder.add_node("direct_answer", driver.node("direct_answer", one_shot(render)), retry_policy=retry_policy)
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "direct_answer")
    builder.add_edge("direct_answer", END)
    return compile_graph(builder, checkpointer, name)
