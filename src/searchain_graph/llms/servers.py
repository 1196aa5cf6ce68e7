"""LLMs behind an OpenAI-compatible server: vLLM, Ollama, llama.cpp's server, ``transformers serve``.

``--model openai:<name>`` talks to OpenAI, or, with ``OPENAI_BASE_URL`` (or ``base_url``) set, to
any server that speaks its chat-completions API. This module builds that client with the
settings a long evaluation needs, and says in plain words what went wrong when the server did:

* a **timeout** per request (``SEARCHAIN_LLM_TIMEOUT`` seconds, default 600, as the OpenAI SDK):
  a request queued behind others on a busy CPU server can take minutes, a hung one must end;
* **retries** with exponential backoff and jitter (``SEARCHAIN_LLM_RETRIES``, default 2): the
  OpenAI SDK retries connection errors, timeouts, 408, 409, 429 and 5xx itself, 0.5 s, 1 s, ... up
  to 8 s apart; the graph's steps then retry what is still transient
  (:func:`is_transient`), so a server that restarts within a few seconds costs nothing;
* a **placeholder API key** when a base URL is set and ``OPENAI_API_KEY`` is not: local servers
  ignore it, and the SDK refuses to start without one;
* :func:`describe_llm_failure`: ``cannot reach the LLM server at http://127.0.0.1:8000/v1: ...``
  instead of the SDK's bare ``Connection error.``.

Log-probabilities: OpenAI and vLLM return them when asked (``logprobs=True``), which
:class:`~searchain_graph.ir.readers.llm.LLMReader` turns into its confidence *f*; ``transformers
serve`` and some others ignore the field. The reader then warns once and falls back (see its
docstring); the default reader (``--reader bundled``) never needs them.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

DEFAULT_TIMEOUT = 600.0
"""Seconds one request may take, queueing included (the OpenAI SDK's own default)."""

DEFAULT_RETRIES = 2
"""Retries of one request by the OpenAI SDK, with exponential backoff and jitter."""

PLACEHOLDER_API_KEY = "not-needed"
"""The API key sent to a server at ``OPENAI_BASE_URL`` when ``OPENAI_API_KEY`` is not set."""


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {raw!r}")
    return value


def configured_base_url(base_url: str | None = None) -> str | None:
    """The server's base URL: ``base_url``, else ``OPENAI_API_BASE``, else ``OPENAI_BASE_URL``."""
    return base_url or os.environ.get("OPENAI_API_BASE") or os.environ.get("OPENAI_BASE_URL") or None


def openai_chat_model(
    model: str,
    *,
    base_url: str | None = None,
    max_tokens: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
) -> BaseChatModel:
    """A ``ChatOpenAI`` for OpenAI or any OpenAI-compatible server, greedy (temperature 0).

    Args:
        model: The model name the server knows (for ``transformers serve``, the path it serves).
        base_url: The server, e.g. ``http://127.0.0.1:8000/v1``; default: ``OPENAI_API_BASE`` or
            ``OPENAI_BASE_URL``, else OpenAI.
        max_tokens: Most tokens per reply; ``None`` leaves it to the server.
        timeout: Seconds per request (default ``SEARCHAIN_LLM_TIMEOUT``, else 600).
        max_retries: Retries per request (default ``SEARCHAIN_LLM_RETRIES``, else 2).

    Raises:
        ValueError: an empty model name, or a negative or non-numeric setting.
    """
    from langchain_openai import ChatOpenAI

    if not model.strip():
        raise ValueError("openai:<model> needs a model name (for a local server, the name it serves)")
    timeout = _env_number("SEARCHAIN_LLM_TIMEOUT", DEFAULT_TIMEOUT) if timeout is None else timeout
    retries = _env_number("SEARCHAIN_LLM_RETRIES", DEFAULT_RETRIES) if max_retries is None else max_retries
    if timeout <= 0 or retries < 0:
        raise ValueError(f"the LLM timeout must be positive and retries non-negative, got {timeout}, {retries}")
    url = configured_base_url(base_url)
    if not url and not os.environ.get("OPENAI_API_KEY"):
        raise ValueError(
            f"openai:{model} needs an API key: set OPENAI_API_KEY, or OPENAI_BASE_URL for an OpenAI-compatible "
            "server (vLLM, llama.cpp, transformers serve), or choose a local --model"
        )
    options: dict[str, Any] = {"model": model, "temperature": 0, "timeout": timeout, "max_retries": int(retries)}
    if url:
        options["base_url"] = url
        if not os.environ.get("OPENAI_API_KEY"):
            options["api_key"] = PLACEHOLDER_API_KEY
    if max_tokens is not None:
        options["max_tokens"] = max_tokens
    return ChatOpenAI(**options)


def server_of(llm: Any) -> str:
    """Where ``llm`` sends its requests, for messages: its base URL, or ``"OpenAI"``."""
    url = getattr(llm, "openai_api_base", None) or configured_base_url()
    return str(url) if url else "OpenAI"


def _is_openai_error(exc: BaseException, name: str) -> bool:
    return any(cls.__name__ == name and cls.__module__.startswith("openai") for cls in type(exc).__mro__)


def _root_cause(exc: BaseException) -> str:
    """The innermost cause's message (``[Errno 111] Connection refused``), else ``exc``'s own."""
    seen, cause = {id(exc)}, exc
    while (nxt := cause.__cause__ or cause.__context__) is not None and id(nxt) not in seen:
        seen.add(id(nxt))
        cause = nxt
    return str(cause) or str(exc) or type(exc).__name__


def is_transient(exc: Exception) -> bool:
    """Whether retrying ``exc`` may help: LangGraph's ``default_retry_on``, less HTTP 4xx from an OpenAI-style API.

    A 400 (a model name the server does not serve, a prompt over its context), 401 or 404 fails
    the same way every time; 408, 409 and 429 are worth another try, as the OpenAI SDK holds.
    """
    from langgraph.types import RetryPolicy

    if _is_openai_error(exc, "APIStatusError"):
        status = getattr(exc, "status_code", 500)
        return bool(status >= 500 or status in (408, 409, 429))
    default = RetryPolicy().retry_on  # LangGraph's default_retry_on, reached through its public default
    if isinstance(default, type) or not callable(default):
        return isinstance(exc, default if isinstance(default, type) else tuple(default))
    return bool(default(exc))


def describe_llm_failure(exc: BaseException, llm: Any = None) -> str | None:
    """A sentence naming the server and what it did, for an error of the OpenAI SDK; else ``None``.

    Args:
        exc: The exception a call (or a graph run) raised.
        llm: The chat model that made the call, to name its server.
    """
    where = server_of(llm)
    if _is_openai_error(exc, "APITimeoutError"):
        return f"the LLM server at {where} did not answer in time ({exc}); if it is only slow, raise --llm-timeout"
    if _is_openai_error(exc, "APIConnectionError"):
        return f"cannot reach the LLM server at {where} ({_root_cause(exc)}); is it running?"
    if _is_openai_error(exc, "APIStatusError"):
        status = getattr(exc, "status_code", "?")
        return f"the LLM server at {where} answered HTTP {status}: {exc}"
    return None
