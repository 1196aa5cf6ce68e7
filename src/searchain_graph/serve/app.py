"""The ASGI app of ``searchain serve`` (Starlette), and :func:`serve` to run it with uvicorn.

Routes:

* ``GET /``: the page (:func:`~searchain_graph.serve.page.app_page`);
* ``POST /runs`` with ``{"question": "..."}``: starts a run; ``202`` with its ``run_id``,
  ``thread_id`` and ``events`` URL, or ``400`` naming what is wrong with the question;
* ``GET /runs/{id}/events``: the run's progress as server-sent events (``update``, then
  ``done`` or ``failed``), each with an ``id``; ``Last-Event-ID`` resumes after it;
* ``GET /runs/{id}``: the run as JSON (status, answer, the whole output once done);
* ``GET /runs/{id}/tree?format=html|markdown``: the tree drawn so far, as a page or Markdown;
* ``GET /healthz``: ``{"ok": true}`` and what is served.

Why Starlette and uvicorn: the app is five routes and a stream, which Starlette covers with
nothing on top (FastAPI would add pydantic request models and OpenAPI that the page does not
use); LangGraph's own server (``langgraph dev``) is built on the same two, and uvicorn is the
reference ASGI server. Server-sent events rather than a WebSocket: the stream only goes one way,
and ``EventSource`` reconnects and resumes by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from searchain_graph.method.question import InvalidQuestionError
from searchain_graph.serve.http import MAX_BODY_BYTES, BadRequest, read_json
from searchain_graph.serve.http import error as _error
from searchain_graph.serve.page import app_page
from searchain_graph.serve.runs import RunManager
from searchain_graph.viz import render_tree

__all__ = ["MAX_BODY_BYTES", "create_app", "serve"]

KEEPALIVE_SECONDS = 15.0
"""An event stream with nothing new sends a comment this often, so proxies keep it open."""


def create_app(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    *,
    context: Any = None,
    title: str = "SearChain",
    about: str = "",
    max_concurrent: int = 1,
    keep_runs: int = 100,
    max_question_chars: int = 2000,
) -> Starlette:
    """The web app that answers questions with ``graph`` and draws each run's tree as it grows.

    Args:
        graph: The compiled SearChain graph, shared by every run (one model per process). Give
            it a checkpointer to keep each run's checkpoints (each run has its own thread id).
        context: The runtime context of every run (``SearChainContext``), or None.
        title: The page's heading.
        about: A line under the heading: what model, index and reader answer.
        max_concurrent: Runs streaming at once; later ones wait their turn.
        keep_runs: Finished runs kept for their pages.
        max_question_chars: Longer questions get a 400.

    Example:
        >>> app = create_app(create_searchain_graph(llm, retriever, reader))  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    runs = RunManager(
        graph, context=context, max_concurrent=max_concurrent, keep=keep_runs, max_question_chars=max_question_chars
    )
    page = app_page(title=title, about=about, max_question_chars=max_question_chars)

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def health(request: Request) -> Response:
        return JSONResponse({"ok": True, "title": title, "about": about})

    async def start(request: Request) -> Response:
        try:
            payload = await read_json(request)
        except BadRequest as exc:
            return _error(exc.status, exc.message)
        if not isinstance(payload, dict) or "question" not in payload:
            return _error(400, 'send {"question": "..."}')
        try:
            run = runs.start(payload["question"])
        except InvalidQuestionError as exc:
            return _error(400, str(exc))
        events = request.url_for("events", run_id=run.id).path
        return JSONResponse({"run_id": run.id, "thread_id": run.thread_id, "events": events}, status_code=202)

    async def show(request: Request) -> Response:
        run = runs.get(request.path_params["run_id"])
        return _error(404, "no such run") if run is None else JSONResponse(run.summary())

    async def tree(request: Request) -> Response:
        run = runs.get(request.path_params["run_id"])
        if run is None:
            return _error(404, "no such run")
        state = run.output or {"question": run.question}
        if request.query_params.get("format", "html") == "markdown":
            return PlainTextResponse(render_tree(state, "markdown"), media_type="text/markdown")
        return HTMLResponse(render_tree(state, "html"))

    async def events(request: Request) -> Response:
        run = runs.get(request.path_params["run_id"])
        if run is None:
            return _error(404, "no such run")
        last = request.headers.get("last-event-id", "")
        after = int(last) if last.strip().isdigit() else -1
        return StreamingResponse(
            _sse(runs.events(run, after)),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        await runs.close()

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/healthz", health),
            Route("/runs", start, methods=["POST"]),
            Route("/runs/{run_id}", show),
            Route("/runs/{run_id}/events", events, name="events"),
            Route("/runs/{run_id}/tree", tree),
        ],
        lifespan=lifespan,
    )
    app.state.runs = runs
    return app


async def _sse(events: AsyncIterator[dict[str, Any]]) -> AsyncIterator[str]:
    """Server-sent events: ``id``, ``event`` and one ``data`` line of JSON each; comments keep it open."""
    iterator = aiter(events)
    pending: asyncio.Future[dict[str, Any]] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(anext(iterator))
            try:
                event = await asyncio.wait_for(asyncio.shield(pending), KEEPALIVE_SECONDS)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            except StopAsyncIteration:
                return
            pending = None
            data = json.dumps(event["data"], ensure_ascii=False)
            yield f"id: {event['id']}\nevent: {event['event']}\ndata: {data}\n\n"
    finally:
        if pending is not None:
            pending.cancel()


def serve(app: Starlette, *, host: str = "127.0.0.1", port: int = 8000, log_level: str = "info") -> None:
    """Run ``app`` with uvicorn until interrupted (Ctrl-C stops the runs still going)."""
    import uvicorn

    uvicorn.run(app, host=host, port=port, log_level=log_level)
