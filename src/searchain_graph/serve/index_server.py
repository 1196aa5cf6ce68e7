"""``searchain serve-index``: one index shared over HTTP, in the ColBERTv2 server protocol.

Many evaluation workers, or several replicas of a LangGraph deployment, query one loaded index
instead of each loading its own. The protocol is the ColBERT repository's ``server.py``, which
DSPy's ``dspy.ColBERTv2(url=...)`` client speaks: ``GET /?query=...&k=...`` (also
``/api/search``, and ``POST`` with ``{"query", "k"}``) answers::

    {"query": "...", "topk": [{"text": "Title | passage", "pid": 12, "rank": 1, "score": 7.1,
                               "prob": 0.62, "id": "...", "title": "Title"}, ...]}

``text`` is ``"Title | passage"`` as on the public ColBERTv2 Wikipedia servers, ``prob`` the
softmax of the returned scores, and the passage's other metadata ride along. A refused request
gets ``{"error": true, "message": ...}`` with a 4xx status: an empty or missing query, one over
:data:`MAX_QUERY_CHARS`, ``k`` not a whole number in 1..100, a body over 64 KiB, one that does
not arrive in time or is not JSON (:func:`~searchain_graph.serve.http.read_json`), a ``Host``
this server does not answer to (421), a write from a browser page of another origin (403), an
unknown route (404) or method (405). Searches run in worker threads, at most ``max_concurrent``
at once; the others wait their turn.

:class:`~searchain_graph.ir.remote.RemoteRetriever` is the matching LangChain client.
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import time
from collections.abc import Iterable, Mapping
from typing import Any

from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from searchain_graph.ir.remote import MAX_K
from searchain_graph.serve.guard import LOOPBACK_NAMES, Guard, json_errors
from searchain_graph.serve.http import BODY_TIMEOUT_S, BadRequest, JSONReply, read_json, shown

__all__ = ["MAX_QUERY_CHARS", "create_index_app", "topk_entries"]

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 2000
"""The longest query searched (a SearChain query is a sentence)."""
DEFAULT_K = 10
"""Passages returned when the request names no ``k`` (the reference server's default)."""


_WHOLE = re.compile(r"[+-]?[0-9]{1,6}")


def _refuse(status: int, message: str) -> JSONResponse:
    return JSONReply({"error": True, "message": message}, status_code=status)


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def topk_entries(docs: list[Document]) -> list[dict[str, Any]]:
    """The ``topk`` list of the protocol for ``docs`` (best first)."""
    scores = [float(doc.metadata.get("score", 0.0)) for doc in docs]
    top = max(scores, default=0.0)
    weights = [math.exp(score - top) for score in scores]
    total = sum(weights) or 1.0
    entries = []
    for rank, (doc, score, weight) in enumerate(zip(docs, scores, weights, strict=True), start=1):
        title = str(doc.metadata.get("title") or "")
        extra = {key: value for key, value in doc.metadata.items() if _plain(value) and key != "score"}
        entries.append(
            {
                **extra,
                "text": f"{title} | {doc.page_content}" if title else doc.page_content,
                "pid": doc.metadata.get("pid"),
                "rank": rank,
                "score": score,
                "prob": weight / total,
            }
        )
    return entries


def _parse(params: Mapping[str, Any]) -> tuple[str, int]:
    query = params.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest(400, "send a non-empty 'query'")
    if len(query) > MAX_QUERY_CHARS:
        raise BadRequest(400, f"the query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    raw = params.get("k", DEFAULT_K)
    if isinstance(raw, str) and _WHOLE.fullmatch(raw.strip()):
        k = int(raw)
    elif isinstance(raw, int) and not isinstance(raw, bool):
        k = raw
    else:
        k = 0
    if not 1 <= k <= MAX_K:
        raise BadRequest(400, f"'k' must be a whole number from 1 to {MAX_K}, got {shown(raw)}")
    return query, k


def create_index_app(
    retriever: BaseRetriever,
    *,
    about: str = "",
    max_concurrent: int = 8,
    hosts: Iterable[str] | None = LOOPBACK_NAMES,
    body_timeout_s: float = BODY_TIMEOUT_S,
) -> Starlette:
    """The ASGI app serving ``retriever`` in the ColBERTv2 server protocol.

    Args:
        retriever: Any LangChain retriever that takes ``invoke(query, k=n)`` (the package's
            BM25 and ColBERT retrievers do).
        about: What ``/healthz`` says is served (no file paths: anyone who reaches it reads it).
        max_concurrent: Searches running at once (in threads); more wait.
        hosts: The ``Host`` names the app answers to (others get a 421); None answers any.
        body_timeout_s: A request body must arrive within this many seconds (else 408).
    """
    if max_concurrent < 1:
        raise ValueError(f"max_concurrent must be at least 1, got {max_concurrent}")
    gate = asyncio.Semaphore(max_concurrent)
    counts = {"queries": 0, "errors": 0}
    started = time.time()

    async def search(request: Request) -> Response:
        params = (
            dict(request.query_params)
            if request.method in ("GET", "HEAD")
            else await read_json(request, timeout=body_timeout_s)
        )
        if not isinstance(params, dict):
            raise BadRequest(400, 'send {"query": "...", "k": 10}')
        query, k = _parse(params)
        async with gate:
            try:
                docs = await run_in_threadpool(retriever.invoke, query, k=k)
            except Exception as exc:  # the retriever's fault, not the client's: say which, log the rest
                counts["errors"] += 1
                logger.exception("the retriever failed on %r", query[:200])
                return _refuse(500, f"the retriever failed ({type(exc).__name__}); the server's log says more")
        counts["queries"] += 1
        return JSONReply({"query": query, "topk": topk_entries(list(docs)[:k])})

    async def health(request: Request) -> Response:
        return JSONReply({"ok": True, "about": about, "uptime_s": round(time.time() - started, 1), **counts})

    routes = [
        Route("/", search, methods=["GET", "POST"]),
        Route("/api/search", search, methods=["GET", "POST"]),
        Route("/healthz", health),
    ]
    return Starlette(
        routes=routes,
        middleware=[Middleware(Guard, refuse=_refuse, hosts=hosts)],
        exception_handlers=json_errors(_refuse),
    )
