"""What every LLM, retriever and reader call records: its trace config and its cost.

Shared by the SearChain graph and the baselines, so that Table 5's counts (LLM calls, words in and
out, tokens, retrievals, readings) mean the same for every method.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.documents import Document
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from searchain_graph.method.parsing import word_count
from searchain_graph.method.state import DocumentDict, Usage


def trace_config(step: str, rnd: int, **extra: Any) -> RunnableConfig:
    """The run config of one traced step: its name, ``searchain_step``/``searchain_round`` metadata and tags."""
    return {
        "run_name": step,
        "metadata": {"searchain_step": step, "searchain_round": rnd, **extra},
        "tags": [f"searchain:{step}", f"searchain:round:{rnd}"],
    }


def empty_usage() -> Usage:
    """Zero counts for every :class:`Usage` field."""
    return {
        "llm_calls": 0,
        "words_in": 0,
        "words_out": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "retrieval_calls": 0,
        "reader_calls": 0,
    }


def doc_dict(doc: Document) -> DocumentDict:
    """A ``Document`` as plain data (msgpack-serialisable state)."""
    return {"page_content": doc.page_content, "metadata": dict(doc.metadata)}


def to_messages(messages: Sequence[dict[str, str]]) -> list[BaseMessage]:
    """``{"role", "content"}`` dicts (as kept in state) to LangChain messages."""
    return [AIMessage(m["content"]) if m["role"] == "assistant" else HumanMessage(m["content"]) for m in messages]


def message_text(message: BaseMessage) -> str:
    """The text of a message, whatever its content blocks."""
    return message.text if isinstance(message.text, str) else str(message.content)


def count_usage(usage: Usage, sent: Sequence[BaseMessage], reply: BaseMessage) -> Usage:
    """``usage`` plus one LLM call: words of ``sent`` and ``reply``, and the reply's token counts."""
    usage = dict(usage)  # type: ignore[assignment]
    usage["llm_calls"] += 1
    usage["words_in"] += word_count([message_text(m) for m in sent])
    usage["words_out"] += word_count(message_text(reply))
    meta = getattr(reply, "usage_metadata", None) or {}
    usage["input_tokens"] += int(meta.get("input_tokens", 0) or 0)
    usage["output_tokens"] += int(meta.get("output_tokens", 0) or 0)
    return usage
