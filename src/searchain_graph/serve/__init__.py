"""``searchain serve``: a local web app that draws each question's Tree-of-Reasoning as it grows.

Needs the ``serve`` extra (``pip install "searchain-graph[serve]"``: Starlette and uvicorn).
:func:`create_app` builds the ASGI app around a compiled graph; :func:`serve` runs it.
"""

from searchain_graph.serve.app import create_app, serve
from searchain_graph.serve.runs import Run, RunManager

__all__ = ["Run", "RunManager", "create_app", "serve"]
