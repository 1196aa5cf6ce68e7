"""A local model's reply as LangChain messages: the whole ``AIMessage``, and the one chunk a stream yields.

:class:`~searchain_graph.llms.chat_model.TransformersChatModel` decodes token ids; these turn them
into what LangChain expects: the text cut at the first stop sequence (and the per-token log
probabilities with it), the finish reason, usage, tool calls parsed from the text protocol
(:mod:`~searchain_graph.llms.tool_calls`), and for ``stream`` the text as it is generated, then one
last ``AIMessageChunk``.
"""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from searchain_graph.llms.sampling import trim_logprobs
from searchain_graph.llms.tool_calls import parse_tool_calls

__all__ = ["last_chunk", "reply_message", "stream_reply", "streamable"]


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


def stream_reply(
    produce: Callable[[Callable[[str], bool]], AIMessage],
    stops: Sequence[str],
    cancel: threading.Event | None = None,
) -> Iterator[ChatGenerationChunk]:
    """The reply ``produce(progress)`` makes, streamed as it is generated, then its last chunk.

    ``produce`` runs in a thread of its own and calls ``progress(text so far)`` after each token;
    ``progress`` returns True once nobody wants the rest (the stream was closed, or ``cancel`` was
    set), and ``produce`` then stops generating: a client that goes away frees the engine at once.
    Text that could still turn out to begin a stop sequence is held back until it cannot
    (:func:`streamable`), so the chunks join into exactly the reply ``produce`` returns; the last
    chunk (``chunk_position="last"``) carries the rest, the usage and the metadata. An error in
    ``produce`` is raised here.
    """
    texts: queue.Queue[str | None] = queue.Queue()
    outcome: dict[str, Any] = {}
    abandoned = cancel if cancel is not None else threading.Event()

    def progress(text: str) -> bool:
        texts.put(text)
        return abandoned.is_set()

    def work() -> None:
        try:
            outcome["message"] = produce(progress)
        except BaseException as exc:  # raised again in the consumer's thread
            outcome["error"] = exc
        finally:
            texts.put(None)

    threading.Thread(target=work, name="searchain-llm-stream", daemon=True).start()
    sent = ""
    try:
        while (text := texts.get()) is not None:
            safe = streamable(text, stops)
            if len(safe) > len(sent) and safe.startswith(sent):
                piece, sent = safe[len(sent) :], safe
                yield ChatGenerationChunk(message=AIMessageChunk(content=piece))
    except GeneratorExit:  # the consumer stopped reading: the engine stops generating
        abandoned.set()
        raise
    if "error" in outcome:
        raise outcome["error"]
    message: AIMessage = outcome["message"]
    content = str(message.content)
    if not content.startswith(sent):  # pragma: no cover - held-back text makes this impossible
        raise RuntimeError("the streamed text is not the start of the reply")
    yield last_chunk(message.model_copy(update={"content": content[len(sent) :]}))


def streamable(text: str, stops: Sequence[str]) -> str:
    """The part of a reply so far that is safe to stream.

    That is the text before any stop sequence, before a tail that could still become one, and
    before an incomplete character.
    """
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=len(text))
    text = text[:cut]
    for s in stops:
        for n in range(min(len(s) - 1, len(text)), 0, -1):
            if text.endswith(s[:n]):
                text = text[:-n]
                break
    return text.rstrip("\ufffd")
