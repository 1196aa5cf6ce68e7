"""Everyday LangChain wrappers of the chat model and the retriever are accepted and work."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import ConfigurableField, RunnableLambda

from searchain_graph import create_searchain_graph
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm


def expected() -> dict[str, Any]:
    out: dict[str, Any] = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS)).invoke(
        {"question": QUESTION}
    )
    return out


class Failing(BaseRetriever):
    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        raise ConnectionError("the index is down")


def broken_llm() -> RuleChatModel:
    def respond(messages: Any) -> str:
        raise ConnectionError("the provider is down")

    return RuleChatModel(respond=respond)


@pytest.mark.parametrize(
    "wrap_llm",
    [
        lambda llm: llm.with_retry(stop_after_attempt=2),
        lambda llm: broken_llm().with_fallbacks([llm]),
        lambda llm: llm.bind(stop=["[Question]"]),
        lambda llm: llm.with_config(tags=["mine"]),
        lambda llm: llm.configurable_fields(respond=ConfigurableField(id="respond")),
    ],
    ids=["with_retry", "with_fallbacks", "bind", "with_config", "configurable_fields"],
)
def test_a_wrapped_chat_model_runs_the_method(wrap_llm: Any) -> None:
    out = create_searchain_graph(wrap_llm(tree_llm()), retriever(), ScriptedReader(TREE_READS)).invoke(
        {"question": QUESTION}
    )
    want = expected()
    assert (out["answer"], out["rounds"], out["references"]) == (want["answer"], want["rounds"], want["references"])


@pytest.mark.parametrize(
    "wrap_retriever",
    [
        lambda r: r.with_config(tags=["index"]),
        lambda r: r.with_retry(stop_after_attempt=2),
        lambda r: Failing().with_fallbacks([r]),
    ],
    ids=["with_config", "with_retry", "with_fallbacks"],
)
async def test_a_wrapped_retriever_runs_the_method(wrap_retriever: Any) -> None:
    graph = create_searchain_graph(tree_llm(), wrap_retriever(retriever()), ScriptedReader(TREE_READS))
    want = expected()
    for out in (graph.invoke({"question": QUESTION}), await graph.ainvoke({"question": QUESTION})):
        assert (out["answer"], out["references"]) == (want["answer"], want["references"])


def test_what_cannot_be_the_model_or_the_retriever_is_still_refused() -> None:
    reader = ScriptedReader(TREE_READS)
    with pytest.raises(TypeError, match="llm must be a LangChain chat model or a Runnable over one"):
        create_searchain_graph("gpt-4o", retriever(), reader)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="llm must be"):
        create_searchain_graph(retriever().with_retry(), retriever(), reader)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="retriever must be a LangChain retriever or a Runnable over one"):
        create_searchain_graph(tree_llm(), tree_llm().with_retry(), reader)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="retriever must be"):
        create_searchain_graph(tree_llm(), lambda q: [], reader)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="set cache= on the chat model inside it"):
        create_searchain_graph(tree_llm().with_retry(), retriever(), reader, llm_cache=":memory:")  # type: ignore[arg-type]
    # Any Runnable that takes a query and returns documents is a retriever.
    docs = RunnableLambda(lambda q: retriever().invoke(q))
    assert create_searchain_graph(tree_llm(), docs, reader).invoke({"question": QUESTION})["answer"]
