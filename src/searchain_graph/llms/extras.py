"""The optional parts of the install, and the error that names the extra a missing one comes with.

A bare ``pip install searchain-graph`` runs the graph on any LangChain chat model, retriever and
reader (``ChatOpenAI``, a vector store, the LLM as reader). The local parts come with extras:

* ``local``: torch, transformers, accelerate, gguf and llama.cpp (``xllamacpp``): the local chat
  models, the bundled, DPR and extractive readers, and the duplicate check by meaning;
* ``onnx``: ONNX Runtime GenAI and its converter (``--llm-backend onnx-int4`` and the like);
* ``qwen``: the offline default model's weights, with ``local``.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Sequence

__all__ = ["MissingExtraError", "installed", "require"]

EXTRA_OF = {
    "torch": "local",
    "transformers": "local",
    "accelerate": "local",
    "gguf": "local",
    "xllamacpp": "local",
    "onnxruntime_genai": "onnx",
    "onnx": "onnx",
    "onnx_ir": "onnx",
}
"""The extra each optional module is installed with."""


class MissingExtraError(ImportError):
    """An optional part is not installed; the message names the extra that installs it."""


def installed(module: str) -> bool:
    """Whether ``module`` can be imported (a name blocked in ``sys.modules`` counts as missing)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def require(modules: Sequence[str], what: str, instead: str = "") -> None:
    """Raise :class:`MissingExtraError` when any of ``modules`` is not installed.

    Args:
        modules: Top-level module names (``"torch"``, ``"xllamacpp"``).
        what: What needs them, for the message ("the bundled reader").
        instead: What to do without them, appended to the message ("or pass duplicates='text'").
    """
    missing = [m for m in modules if not installed(m)]
    if not missing:
        return
    extras = sorted({EXTRA_OF.get(m, "local") for m in missing})
    wanted = ",".join(extras)
    raise MissingExtraError(
        f"{what} needs {', '.join(missing)}, which this installation lacks: "
        f"pip install 'searchain-graph[{wanted}]' (with torch, install torch==2.13.0 or your platform's build first)"
        + (f", {instead}" if instead else "")
    )
