"""The demo corpus: the passages the quick start, ``searchain ask`` and the LangGraph server search.

Two files ship inside the wheel (``searchain_graph/ir/demo_data/``) and live in a source checkout
under ``examples/data/``:

* ``searchain_demo.jsonl``: 8 short passages about the paper's running example, written for this
  project (Apache-2.0);
* ``hotpotqa_dev200_paragraphs.jsonl``: the 1,999 paragraphs of the first 200 questions of IRCoT's
  HotpotQA dev subsample (CC BY-SA 4.0, derived from HotpotQA; attribution in the folder's
  ``README.md``).
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEMO_FILES", "demo_corpus"]

DEMO_FILES: tuple[str, ...] = ("searchain_demo.jsonl", "hotpotqa_dev200_paragraphs.jsonl")
"""The demo corpus's files, in the order they are indexed."""

_SHIPPED = Path(__file__).resolve().parent / "demo_data"
_CHECKOUT = Path(__file__).resolve().parents[3] / "examples" / "data"


def demo_corpus() -> list[Path]:
    """The demo corpus's files: the wheel's copy, or a source checkout's ``examples/data``.

    Example:
        ``BM25Retriever.from_files(demo_corpus(), k=1)``

    Raises:
        FileNotFoundError: neither copy is complete (an install that dropped package data).
    """
    for folder in (_SHIPPED, _CHECKOUT):
        files = [folder / name for name in DEMO_FILES]
        if all(f.is_file() for f in files):
            return files
    raise FileNotFoundError(
        f"the demo corpus ({', '.join(DEMO_FILES)}) is in neither {_SHIPPED} nor {_CHECKOUT}: reinstall "
        "searchain-graph, or pass your own passages (--corpus FILE or --index DIR)"
    )
