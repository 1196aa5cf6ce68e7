"""A local model's reply as LangChain messages: the whole ``AIMessage``, and the one chunk a stream yields.

:class:`~searchain_graph.llms.chat_model.TransformersChatModel` decodes token ids; these turn them
into what LangChain expects: the text cut at the first stop sequence (and the per-token log
probabilities with it), the finish reason, usage, tool calls parsed from the text protocol
(:mod:`~searchain_graph.llms.tool_calls`), and for ``stream`` one last ``AIMessageChunk``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from searchain_graph.llms.sampling import trim_logprobs
from searchain_graph.llms.tool_calls import parse_tool_calls

__all__ = ["last_chunk", "reply_message"]


def reply_message(
    prompt_len: int,
    new_ids: Sequence[int],
    tokens: Sequence[str],
    text: str,
    logprobs: Sequence[float],
    finish: str,
    stop: Sequence[str],
    want_logprobs: bool,
    tools: Sequence[dict[str, Any]] | None = None,
    *,
    model_name: str,
) -> AIMessage:
    """The reply of ``new_ids`` (``text``; ``tokens`` one by one) to a prompt of ``prompt_len`` tokens."""
    token_logprobs = [{"token": t, "logprob": lp} for t, lp in zip(tokens, logprobs, strict=False)]
    if stop:
        cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
        if cut >= 0:
            text = text[:cut]
            finish = "stop"
            if token_logprobs:
                token_logprobs = trim_logprobs(token_logprobs, len(text))
    metadata: dict[str, Any] = {"model_name": model_name, "finish_reason": finish}
    if want_logprobs:
        metadata["logprobs"] = {"content": token_logprobs}
    text, calls = parse_tool_calls(text, tools) if tools else (text, [])
    return AIMessage(
        content=text,
        tool_calls=calls,
        response_metadata=metadata,
        usage_metadata={
            "input_tokens": prompt_len,
            "output_tokens": len(new_ids),
            "total_tokens": prompt_len + len(new_ids),
        },
    )


def last_chunk(message: AIMessage) -> ChatGenerationChunk:
    """``message`` as the one chunk of a stream (``chunk_position="last"``), usage and tool calls kept."""
    calls = [
        {"name": c["name"], "args": json.dumps(c["args"]), "id": c.get("id"), "index": i}
        for i, c in enumerate(message.tool_calls)
    ]
    return ChatGenerationChunk(
        message=AIMessageChunk(
            content=message.content,
            tool_call_chunks=calls,  # type: ignore[arg-type]
            response_metadata=message.response_metadata,
            usage_metadata=message.usage_metadata,
            chunk_position="last",
        )
    )
