"""The ASGI app of ``searchain serve`` (Starlette).

Routes:

* ``GET /``: the page (:func:`~searchain_graph.serve.page.app_page`);
* ``POST /runs`` with ``{"question": "..."}``: starts a run; ``202`` with its ``run_id``,
  ``thread_id`` and ``events`` URL, or ``400`` naming what is wrong with the question;
* ``GET /runs/{id}/events``: the run's progress as server-sent events (``update``, then
  ``done`` or ``failed``), each with an ``id``; ``Last-Event-ID`` resumes after it;
* ``GET /runs``: the runs kept, newest first (status, question, answer; no output);
* ``GET /runs/{id}``: the run as JSON (status, answer, the whole output once done);
* ``GET /runs/{id}/tree?format=html|markdown``: the tree drawn so far, as a page or Markdown;
* ``POST /runs/{id}/review`` with ``{"decision": "accept" | "reject" | "edit", "answer"?, "id"}``:
  a run paused before a correction (``review``, a graph built with ``review=True``) goes on with
  that decision. ``id`` is the review's (or give its ``round`` and ``node``): ``409`` when the run
  waits for no decision or for one on another correction (a retried decision), ``400`` naming
  what is wrong;
* ``GET /healthz``: ``{"ok": true}`` and what is served; ``503`` with ``{"ok": false, "store":
  "cannot write: ..."}`` while the store of runs cannot write (disk full, file locked, deleted),
  when ``POST /runs`` is refused with a ``503`` too.

Every refusal is ``{"error": "..."}`` with a 4xx status naming the problem (unknown routes and
methods too); :class:`~searchain_graph.serve.guard.Guard` refuses foreign ``Host`` names (421),
writes from other origins (403) and, with a token, requests without it (401).
:func:`~searchain_graph.serve.server.serve` runs the app with time limits and a bounded shutdown.

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
import logging
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

from langgraph.graph.state import CompiledStateGraph
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from searchain_graph.method.question import InvalidQuestionError
from searchain_graph.serve.db import open_checkpointer, open_run_store
from searchain_graph.serve.guard import LOOPBACK_NAMES, Guard, json_errors
from searchain_graph.serve.http import (
    BODY_TIMEOUT_S,
    MAX_BODY_BYTES,
    BadRequest,
    JSONReply,
    error,
    lone_surrogate,
    read_json,
    shown,
)
from searchain_graph.serve.page import app_page
from searchain_graph.serve.postgres import fence_checkpoints
from searchain_graph.serve.runs import RunManager
from searchain_graph.serve.store import RunStore
from searchain_graph.viz import render_tree

__all__ = ["MAX_BODY_BYTES", "create_app", "last_event_id"]

logger = logging.getLogger(__name__)

KEEPALIVE_SECONDS = 15.0
"""An event stream with nothing new sends a comment this often, so proxies keep it open."""
MAX_EVENT_ID_DIGITS = 9
"""A ``Last-Event-ID`` longer than this is not one of ours."""


def last_event_id(value: str | None) -> int:
    """The event id a ``Last-Event-ID`` header names, or -1 when there is none (an empty header).

    Raises:
        BadRequest: 400 when it is not a whole number of at most :data:`MAX_EVENT_ID_DIGITS` ASCII digits.
    """
    text = (value or "").strip()
    if not text:
        return -1
    if not (text.isascii() and text.isdigit() and len(text) <= MAX_EVENT_ID_DIGITS):
        raise BadRequest(400, f"Last-Event-ID must be the id of an event (a whole number), got {shown(text, 40)}")
    return int(text)


def create_app(
    graph: CompiledStateGraph[Any, Any, Any, Any],
    *,
    context: Any = None,
    title: str = "SearChain",
    about: str = "",
    max_concurrent: int = 1,
    keep_runs: int = 100,
    max_question_chars: int = 2000,
    max_waiting: int = 100,
    hosts: Iterable[str] | None = LOOPBACK_NAMES,
    body_timeout_s: float = BODY_TIMEOUT_S,
    token: str | None = None,
    db: str | Path | None = None,
    adopt_every_s: float = 5.0,
    store: RunStore | None = None,
) -> Starlette:
    """The web app that answers questions with ``graph`` and draws each run's tree as it grows.

    Args:
        graph: The compiled SearChain graph, shared by every run (one model per process). Give
            it a checkpointer to keep each run's checkpoints (each run has its own thread id).
        context: The runtime context of every run (``Context``), or None.
        title: The page's heading.
        about: A line under the heading: what model, index and reader answer.
        max_concurrent: Runs streaming at once; later ones wait their turn.
        keep_runs: Finished runs kept for their pages.
        max_question_chars: Longer questions get a 400.
        max_waiting: Runs waiting their turn at most; more get a 503.
        hosts: The ``Host`` names the app answers to (others get a 421); None answers any. The
            default is the loopback names (:func:`~searchain_graph.serve.guard.served_hosts`
            gives them for another bind).
        body_timeout_s: A request body must arrive within this many seconds (else 408).
        token: A token every request must carry (``Authorization: Bearer``, or ``?token=``; the
            page is given it), or None.
        db: A SQLite file, or a ``postgresql://`` URL, that keeps the runs, their events and the
            graph's checkpoints (replacing its checkpointer), so that they outlive the process:
            past runs are listed again after a restart, and runs in flight resume
            (:meth:`RunManager.restore`). Several servers (replicas) can share one PostgreSQL
            database: each lists and follows every run, and takes over those of a replica that
            died. None keeps them in memory.
        adopt_every_s: With PostgreSQL, how often a replica looks for runs whose server died.
        store: The store of runs for ``db``, opened already (``searchain serve`` opens it before
            loading the model, so that a bad ``--db`` stops it at once); default: opened here.
            The app closes it when it stops.

    Example:
        >>> app = create_app(create_searchain_graph(llm, retriever, reader))  # doctest: +SKIP
        >>> uvicorn.run(app, host="127.0.0.1", port=8000)  # doctest: +SKIP
    """
    runs = RunManager(
        graph,
        context=context,
        max_concurrent=max_concurrent,
        keep=keep_runs,
        max_question_chars=max_question_chars,
        max_waiting=max_waiting,
        store=store if store is not None else open_run_store(db),
    )
    page = app_page(title=title, about=about, max_question_chars=max_question_chars, token=token)

    async def index(request: Request) -> Response:
        return HTMLResponse(page)

    async def health(request: Request) -> Response:
        problem = await asyncio.to_thread(runs.store.health) if runs.store.durable else None
        if problem is not None:
            return JSONReply({"ok": False, "title": title, "about": about, "store": problem}, status_code=503)
        return JSONReply({"ok": True, "title": title, "about": about})

    async def start(request: Request) -> Response:
        payload = await read_json(request, timeout=body_timeout_s)
        if not isinstance(payload, dict) or "question" not in payload:
            return error(400, 'send {"question": "..."}')
        try:
            run = await runs.astart(payload["question"])
        except InvalidQuestionError as exc:
            return error(400, str(exc))
        events = request.url_for("events", run_id=run.id).path
        return JSONReply({"run_id": run.id, "thread_id": run.thread_id, "events": events}, status_code=202)

    async def decide(request: Request) -> Response:
        run = await runs.aget(request.path_params["run_id"])
        if run is None:
            return error(404, "no such run")
        payload = await read_json(request, timeout=body_timeout_s)
        run = await runs.decide(run, payload)
        return JSONReply({"run_id": run.id, "status": run.status}, status_code=202)

    async def listing(request: Request) -> Response:
        return JSONReply({"runs": await runs.listing()})

    async def show(request: Request) -> Response:
        run = await runs.aget(request.path_params["run_id"])
        return error(404, "no such run") if run is None else JSONReply(run.summary())

    async def tree(request: Request) -> Response:
        run = await runs.aget(request.path_params["run_id"])
        if run is None:
            return error(404, "no such run")
        state = run.output or {"question": run.question}
        if request.query_params.get("format", "html") == "markdown":
            return PlainTextResponse(render_tree(state, "markdown"), media_type="text/markdown")
        return HTMLResponse(render_tree(state, "html"))

    async def events(request: Request) -> Response:
        run = await runs.aget(request.path_params["run_id"])
        if run is None:
            return error(404, "no such run")
        after = last_event_id(request.headers.get("last-event-id"))
        return StreamingResponse(
            _sse(runs.events(run, after)),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        close_saver: Any = None
        adopting: asyncio.Task[None] | None = None
        try:
            if db is not None:
                saver, close_saver = await open_checkpointer(db, max_size=max_concurrent + 4)
                if runs.store.shared:  # a replica that lost a thread's claim writes none of its checkpoints
                    fence_checkpoints(saver, runs.store.holds)
                runs.graph = graph.copy(update={"checkpointer": saver})
                if runs.store.shared:
                    # Replicas: the runs in flight that no live process holds, at once and every few
                    # seconds, in the background (each taken after the claim's grace).
                    adopting = asyncio.create_task(runs.adopt_every(adopt_every_s), name="searchain adopt")
                else:
                    recovered = await runs.restore()
                    if recovered:
                        logger.warning(
                            "%d run(s) in flight when the server last stopped: resumed or failed", len(recovered)
                        )
        except BaseException:
            # A start that fails leaves nothing open: the checkpointer's connection thread (not a
            # daemon) would keep the process alive, no longer listening, after uvicorn gives up.
            with contextlib.suppress(Exception):
                await _stop(runs, adopting, close_saver)
            raise
        try:
            yield
        finally:
            await _stop(runs, adopting, close_saver)

    app = Starlette(
        routes=[
            Route("/", index),
            Route("/healthz", health),
            Route("/runs", start, methods=["POST"]),
            Route("/runs", listing, methods=["GET"]),
            Route("/runs/{run_id}", show),
            Route("/runs/{run_id}/events", events, name="events"),
            Route("/runs/{run_id}/review", decide, methods=["POST"]),
            Route("/runs/{run_id}/tree", tree),
        ],
        middleware=[Middleware(Guard, refuse=error, hosts=hosts, token=token)],
        exception_handlers=json_errors(error),
        lifespan=lifespan,
    )
    app.state.runs = runs
    app.state.drain = runs.drain
    return app


async def _stop(runs: RunManager, adopting: asyncio.Task[None] | None, close_saver: Any) -> None:
    """Stop the runs, then close the checkpointer and the store: each step even when one before it fails."""
    try:
        if adopting is not None:
            adopting.cancel()
            await asyncio.gather(adopting, return_exceptions=True)
        await runs.close()
    finally:
        try:
            if close_saver is not None:
                await close_saver()
        finally:
            runs.store.close()


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
            if lone_surrogate(data) is not None:  # not UTF-8: send \\u escapes rather than fail
                data = json.dumps(event["data"])
            yield f"id: {event['id']}\nevent: {event['event']}\ndata: {data}\n\n"
    finally:
        if pending is not None:
            pending.cancel()
