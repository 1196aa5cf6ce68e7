"""The ``searchain`` command: ``ask``, ``index``, ``eval`` and ``report``.

The top layer: it wires the method, IR, local LLMs and the evaluation together.
"""

from searchain_graph.cli.main import main

__all__ = ["main"]
