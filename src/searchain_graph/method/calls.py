"""What every LLM, retriever and reader call records: its trace config and its cost.

Shared by the SearChain graph and the baselines, so that Table 5's counts (LLM calls, words in and
out, tokens, retrievals, readings) mean the same for every method, and so that every run in a
LangSmith trace carries its step and round (``searchain_step``, ``searchain_round``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langsmith import get_current_run_tree

from searchain_graph.ir.documents import json_safe
from searchain_graph.llms.call_cache import is_cache_hit
from searchain_graph.method.parsing import word_count
from searchain_graph.method.state import DocumentDict, Usage, empty_usage

__all__ = [
    "call_usage",
    "count_usage",
    "doc_dict",
    "empty_usage",
    "label_node_run",
    "message_text",
    "to_messages",
    "trace_config",
]


def trace_config(step: str, rnd: int, *, named: bool = True, **extra: Any) -> RunnableConfig:
    """The run config of one traced call: ``searchain_step``/``searchain_round`` metadata and tags.

    Args:
        step: The step it belongs to (``coq_generation``, ``retrieve``, ``read``, ...).
        rnd: The LLM-IR round.
        named: Name the run after the step. LLM calls keep the model's own name, so that a
            graph node's run is never wrapping a run of the same name.
        **extra: More metadata (``searchain_node``, ``searchain_query``, ...).
    """
    config: RunnableConfig = {
        "metadata": {"searchain_step": step, "searchain_round": rnd, **extra},
        "tags": [f"searchain:{step}", f"searchain:round:{rnd}"],
    }
    if named:
        config["run_name"] = step
    return config


def label_node_run(step: str, rnd: int) -> None:
    """Put the round in the metadata and tags of the graph node's own run.

    A node's run starts before the node knows its round (LangGraph fixes a run's metadata when it
    starts), so the node adds it to the run it is running in; LangSmith's tracer sends metadata and
    tags again when the run ends. Without tracing there is no run, and nothing to do.
    """
    run = get_current_run_tree()
    if run is None:
        return
    run.add_metadata({"searchain_step": step, "searchain_round": rnd})
    tags = run.tags if run.tags is not None else []
    run.tags = tags + [t for t in (f"searchain:{step}", f"searchain:round:{rnd}") if t not in tags]


def doc_dict(doc: Document, notes: list[str] | None = None) -> DocumentDict:
    """A ``Document`` as plain data (msgpack-serialisable state, strict JSON).

    Every method's retrieved passages enter the package here, whatever the retriever: their
    metadata is made strict JSON (:func:`~searchain_graph.ir.documents.json_safe`: a ``NaN``
    score becomes ``None``, a ``datetime`` its ISO text, a numpy scalar its Python value, ...),
    each conversion added to ``notes`` when given.
    """
    metadata = json_safe(doc.metadata if isinstance(doc.metadata, dict) else {}, notes)
    return {"page_content": doc.page_content, "metadata": metadata}


def to_messages(messages: Sequence[dict[str, str]]) -> list[BaseMessage]:
    """``{"role", "content"}`` dicts (as kept in state) to LangChain messages."""
    kinds: dict[str, type[BaseMessage]] = {"assistant": AIMessage, "system": SystemMessage}
    return [kinds.get(m["role"], HumanMessage)(m["content"]) for m in messages]


def message_text(message: BaseMessage) -> str:
    """The text of a message, whatever its content blocks."""
    return message.text if isinstance(message.text, str) else str(message.content)


def count_usage(usage: Usage, sent: Sequence[BaseMessage], reply: BaseMessage) -> Usage:
    """``usage`` plus one LLM call: its words, tokens, and whether an LLM cache answered it.

    A call answered from a cache still counts its words and tokens: what the method asked for.
    """
    usage = dict(usage)  # type: ignore[assignment]
    usage["llm_calls"] += 1
    usage["words_in"] += word_count([message_text(m) for m in sent])
    usage["words_out"] += word_count(message_text(reply))
    meta = getattr(reply, "usage_metadata", None) or {}
    usage["input_tokens"] += int(meta.get("input_tokens", 0) or 0)
    usage["output_tokens"] += int(meta.get("output_tokens", 0) or 0)
    usage["llm_cache_hits"] += int(is_cache_hit(reply))
    return usage


def call_usage(sent: Sequence[BaseMessage], reply: BaseMessage) -> Usage:
    """The cost of one LLM call, for the ``usage`` reducer."""
    return count_usage(empty_usage(), sent, reply)
