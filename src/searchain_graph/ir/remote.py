"""A retriever for any server that speaks the ColBERTv2 server protocol (DSPy's ``dspy.ColBERTv2``).

The protocol is the one of the ColBERT repository's ``server.py``, which DSPy's client and the
public ColBERTv2 Wikipedia endpoints use: ``GET URL?query=...&k=...`` (or ``POST URL`` with the
JSON ``{"query": ..., "k": ...}``) answers ``{"query": ..., "topk": [{"text", "pid", "rank",
"score", "prob", ...}]}`` best first, or ``{"error": true, "message": ...}``. ``searchain
serve-index`` serves any index of this package that way (:mod:`searchain_graph.serve.index_server`).

:class:`RemoteRetriever` is a LangChain ``BaseRetriever`` over such a URL, sync and async, with a
timeout per request and retries with exponential backoff on the errors that may pass (connection
errors, timeouts, HTTP 429 and 5xx). Anything else, or a reply that is not the protocol, raises
:class:`RemoteRetrievalError` naming the URL. A passage ``text`` of the form ``"Title | text"``
(the public Wikipedia abstracts) is split into its title and text when the reply has no
``title`` field.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Mapping
from typing import Any

import httpx
from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import field_validator

__all__ = ["MAX_K", "RemoteRetrievalError", "RemoteRetriever", "is_url"]

MAX_K = 100
"""The most passages a ColBERTv2 server returns per query (the reference server's cap)."""


class RemoteRetrievalError(RuntimeError):
    """The retrieval server failed, was unreachable after the retries, or did not speak the protocol."""


def is_url(text: str) -> bool:
    """True for an ``http://`` or ``https://`` address (an index given as a URL)."""
    return text.startswith(("http://", "https://"))


def _valid_k(k: int) -> int:
    if not 1 <= k <= MAX_K:
        raise ValueError(f"k must be between 1 and {MAX_K}, got {k}")
    return k


def _transient(error: BaseException) -> bool:
    if isinstance(error, httpx.TransportError):  # connection refused or reset, timeouts
        return True
    return isinstance(error, httpx.HTTPStatusError) and (
        error.response.status_code == 429 or error.response.status_code >= 500
    )


def documents_from_reply(url: str, reply: Any, k: int) -> list[Document]:
    """The documents of a ColBERTv2 server's JSON reply, best first.

    Raises:
        RemoteRetrievalError: an ``error`` reply, or one that is not the protocol.
    """
    if not isinstance(reply, Mapping):
        raise RemoteRetrievalError(f"{url} did not answer a JSON object (got {type(reply).__name__})")
    if reply.get("error"):
        raise RemoteRetrievalError(f"{url} answered an error: {reply.get('message', 'no message')}")
    topk = reply.get("topk")
    if not isinstance(topk, list):
        raise RemoteRetrievalError(f"{url} answered without a 'topk' list: not a ColBERTv2 server?")
    docs = []
    for n, hit in enumerate(topk[:k], start=1):
        if not isinstance(hit, Mapping) or not isinstance(hit.get("text"), str):
            raise RemoteRetrievalError(f"{url}: passage {n} of 'topk' has no 'text'")
        text, metadata = hit["text"], {key: value for key, value in hit.items() if key not in ("text", "long_text")}
        title = metadata.get("title")
        if isinstance(title, str) and title and text.startswith(f"{title} | "):
            text = text[len(title) + 3 :]  # searchain serve-index sends the title apart too
        elif "title" not in metadata and " | " in text:
            title, _, text = text.partition(" | ")
            metadata["title"] = title
        if "id" not in metadata and metadata.get("pid") is not None:
            metadata["id"] = str(metadata["pid"])
        docs.append(Document(page_content=text, metadata=metadata))
    return docs


class RemoteRetriever(BaseRetriever):
    """A LangChain retriever over a ColBERTv2-protocol server (``searchain serve-index``, DSPy's servers).

    Example:
        >>> retriever = RemoteRetriever(url="http://127.0.0.1:8893/", k=1)  # doctest: +SKIP
        >>> retriever.invoke("Where was Kevin Drew born?")  # doctest: +SKIP
    """

    url: str
    """The search endpoint, e.g. ``http://127.0.0.1:8893/`` or ``http://host:2017/wiki17_abstracts``."""
    k: int = 1
    """Passages returned per query (at most :data:`MAX_K`); ``invoke(q, k=n)`` overrides it."""
    timeout: float = 10.0
    """Seconds per request."""
    max_attempts: int = 3
    """Tries per query on transient errors (1: no retry)."""
    backoff: float = 0.5
    """Seconds before the first retry; doubled for each next one (with jitter)."""
    post: bool = False
    """Send ``POST`` with a JSON body instead of ``GET`` with query parameters."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str) -> str:
        if not is_url(url):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        return url

    @field_validator("k")
    @classmethod
    def _check_k(cls, k: int) -> int:
        return _valid_k(k)

    @field_validator("max_attempts")
    @classmethod
    def _check_attempts(cls, attempts: int) -> int:
        if attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {attempts}")
        return attempts

    def _request(self, query: str, k: int) -> dict[str, Any]:
        payload = {"query": query, "k": k}
        return {"json": payload} if self.post else {"params": payload}

    def _delay(self, attempt: int) -> float:
        return float(self.backoff * 2 ** (attempt - 1) * (0.5 + random.random() / 2))  # jitter

    def _raise_unless_retried(self, error: httpx.HTTPError, attempt: int) -> None:
        """Raise :class:`RemoteRetrievalError` for ``error`` unless it is transient and tries remain."""
        if _transient(error) and attempt < self.max_attempts:
            return
        tries = f" after {attempt} tries" if attempt > 1 else ""
        if isinstance(error, httpx.HTTPStatusError):
            body = error.response.text[:200]
            message = f"{self.url} answered HTTP {error.response.status_code}{tries}: {body}"
        else:
            message = f"{self.url} could not be reached{tries}: {type(error).__name__}: {error}"
        raise RemoteRetrievalError(message) from error

    def _not_json(self, error: ValueError) -> RemoteRetrievalError:
        return RemoteRetrievalError(f"{self.url} did not answer JSON: {error}")

    def _k(self, k: int | None) -> int:
        return self.k if k is None else _valid_k(k)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        with httpx.Client(timeout=self.timeout) as client:
            for attempt in range(1, self.max_attempts + 1):
                try:
                    response = client.request("POST" if self.post else "GET", self.url, **self._request(query, k))
                    response.raise_for_status()
                    reply = response.json()
                except httpx.HTTPError as error:
                    self._raise_unless_retried(error, attempt)
                    time.sleep(self._delay(attempt))
                    continue
                except ValueError as error:
                    raise self._not_json(error) from error
                return documents_from_reply(self.url, reply, k)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        k = self._k(k)
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            for attempt in range(1, self.max_attempts + 1):
                try:
                    method = "POST" if self.post else "GET"
                    response = await client.request(method, self.url, **self._request(query, k))
                    response.raise_for_status()
                    reply = response.json()
                except httpx.HTTPError as error:
                    self._raise_unless_retried(error, attempt)
                    await asyncio.sleep(self._delay(attempt))
                    continue
                except ValueError as error:
                    raise self._not_json(error) from error
                return documents_from_reply(self.url, reply, k)
        raise AssertionError("unreachable")  # pragma: no cover
