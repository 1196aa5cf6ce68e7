"""``searchain serve``: a local web app that draws each question's Tree-of-Reasoning as it grows.

Needs the ``serve`` extra (``pip install "searchain-graph[serve]"``: Starlette and uvicorn).
:func:`create_app` builds the ASGI app around a compiled graph; :func:`serve` runs it (or the
index app of ``searchain serve-index``) with time limits and a bounded shutdown.
"""

from searchain_graph.serve.app import create_app
from searchain_graph.serve.runs import Run, RunManager
from searchain_graph.serve.server import ServerLimits, serve

__all__ = ["Run", "RunManager", "ServerLimits", "create_app", "serve"]
