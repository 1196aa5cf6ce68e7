"""Running the package's apps with uvicorn: time limits on every phase of a connection, and a bounded shutdown.

uvicorn's defaults leave two waits without an end: a connection that never finishes its
request headers is kept for ever (uvicorn has no header timeout), and on Ctrl-C or ``SIGTERM`` it
waits for every open response to end, an event stream included, which ends only when its run
does. :func:`serve` bounds both (:class:`ServerLimits`):

* request headers: at most ``max_header_bytes`` (``h11_max_incomplete_event_size``), complete
  within ``header_timeout_s`` of the connection opening or of the previous response, else the
  connection is closed;
* an idle keep-alive connection is closed after ``keep_alive_s`` (``timeout_keep_alive``);
* a body must arrive within :data:`~searchain_graph.serve.http.BODY_TIMEOUT_S` (the apps'
  own deadline: ``408``);
* at most ``max_connections`` connections or requests at once (``limit_concurrency``); more
  get uvicorn's plain ``503``;
* shutdown: the app's ``state.drain(grace)`` (``searchain serve``: refuse new runs, cancel the
  queued ones, give the running ones ``shutdown_grace_s``, cancel them, which ends their event
  streams), then uvicorn's graceful shutdown, cut off ``shutdown_grace_s + 5`` seconds later; a
  process still alive ``shutdown_grace_s + 15`` seconds after the signal (a model call in a
  worker thread cannot be cancelled) exits at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import socket
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["HeaderTimeoutProtocol", "RedactTokens", "ServerLimits", "serve"]

logger = logging.getLogger(__name__)

_TOKEN_IN_URL = re.compile(r"([?&]token=)[^&\s]*")


@dataclass(frozen=True)
class ServerLimits:
    """The time and size limits of :func:`serve` (see the module)."""

    header_timeout_s: float = 10.0
    keep_alive_s: float = 5.0
    max_header_bytes: int = 16 * 1024
    max_connections: int = 256
    shutdown_grace_s: float = 5.0


class HeaderTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers do not arrive in time."""

    header_timeout_s = ServerLimits.header_timeout_s

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock for the first request's headers."""
        self.header_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._watch_headers()

    def data_received(self, data: bytes) -> None:
        """Stop the clock once the headers are in."""
        super().data_received(data)
        self._watch_headers()

    def on_response_complete(self) -> None:
        """Start the clock for the next request's headers."""
        super().on_response_complete()
        self._watch_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._stop_clock()
        super().connection_lost(exc)

    def _watch_headers(self) -> None:
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if waiting and self.header_timer is None:
            self.header_timer = self.loop.call_later(self.header_timeout_s, self._headers_late)
        elif not waiting:
            self._stop_clock()

    def _stop_clock(self) -> None:
        if self.header_timer is not None:
            self.header_timer.cancel()
            self.header_timer = None

    def _headers_late(self) -> None:
        self.header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.close()


class RedactTokens(logging.Filter):
    """Hides ``?token=...`` in uvicorn's access log."""

    def filter(self, record: logging.LogRecord) -> bool:
        """Keep the record, with the token's value replaced by ``…``."""
        if isinstance(record.args, tuple):
            record.args = tuple(_TOKEN_IN_URL.sub(r"\1…", a) if isinstance(a, str) else a for a in record.args)
        return True


class _GracefulServer(uvicorn.Server):
    """uvicorn's server, draining the app before its own shutdown, and exiting on time whatever hangs."""

    def __init__(self, config: uvicorn.Config, drain: Callable[[float], Awaitable[None]] | None, grace: float) -> None:
        super().__init__(config)
        self.drain = drain
        self.grace = grace
        self.watchdog: threading.Timer | None = None

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """Drain the app while uvicorn closes its connections; arm the last-resort exit."""
        self.watchdog = threading.Timer(self.grace + 15.0, _exit_now)
        self.watchdog.daemon = True
        self.watchdog.start()
        draining = asyncio.ensure_future(self.drain(self.grace)) if self.drain is not None else None
        await super().shutdown(sockets)
        if draining is not None:
            draining.cancel()
            await asyncio.gather(draining, return_exceptions=True)


def _exit_now() -> None:
    logger.error("the server did not stop in time (a call still running in a worker thread?): exiting now")
    logging.shutdown()
    os._exit(1)


def serve(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    log_level: str = "info",
    limits: ServerLimits = ServerLimits(),  # noqa: B008 - frozen, so one shared default is safe
) -> None:
    """Run ``app`` with uvicorn until interrupted, within ``limits`` (see the module).

    Ctrl-C or ``SIGTERM`` stops the server within about ``limits.shutdown_grace_s`` seconds:
    an app with ``state.drain`` (``searchain serve``'s) cancels its runs after the grace period
    and ends their event streams.
    """
    protocol = type("HeaderTimeoutProtocol", (HeaderTimeoutProtocol,), {"header_timeout_s": limits.header_timeout_s})
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=protocol,
        timeout_keep_alive=int(max(1, limits.keep_alive_s)),
        h11_max_incomplete_event_size=limits.max_header_bytes,
        limit_concurrency=limits.max_connections,
        timeout_graceful_shutdown=int(limits.shutdown_grace_s) + 5,
        server_header=False,
    )
    logging.getLogger("uvicorn.access").addFilter(RedactTokens())
    drain = getattr(getattr(app, "state", None), "drain", None)
    server = _GracefulServer(config, drain if callable(drain) else None, limits.shutdown_grace_s)
    try:
        server.run()
    finally:
        if server.watchdog is not None:
            server.watchdog.cancel()
