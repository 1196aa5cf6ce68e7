"""Index directories: the manifest, the build summary, and the atomic write.

An index directory (written by :func:`~searchain_graph.ir.index.build_index` or ``searchain index``)
holds:

* ``searchain_index.json``: which retriever built it, from which files, how many passages;
* ``passages.jsonl`` and ``passages.offsets.npy``: the passages (a
  :class:`~searchain_graph.ir.corpus.PassageStore`);
* the retriever's own files (``bm25_*.npy`` and ``bm25.json`` for BM25, ``colbert/`` for ColBERT).

Every retriever builds into ``DIR.partial`` and renames it to ``DIR`` only when complete
(:func:`write_index`), so an interrupted build never leaves a half-written index behind. An existing
index is swapped out by two renames (``DIR`` → ``DIR.old``, ``DIR.partial`` → ``DIR``): a build killed
between them leaves ``DIR.old`` whole, and the next load or build puts it back. The next build
deletes a killed build's ``DIR.partial`` before it starts, and a build that fails deletes its own.
A ``DIR`` that is a file, or a directory holding something other than an index, is refused before
anything is built (:func:`check_index_target`).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from searchain_graph._files import write_aside


def load_array(path: Path, *, mmap: bool = False) -> Any:
    """A NumPy array of an index, never unpickled: an index holds numbers only.

    Raises:
        ValueError: the file holds pickled objects (a crafted or foreign file), naming it.
    """
    import numpy as np

    try:
        array = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except ValueError as exc:
        raise ValueError(f"{path}: not a plain numeric array ({exc}); refusing to load it") from exc
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biuf":
        raise ValueError(f"{path}: expected a numeric array, found {getattr(array, 'dtype', type(array))}")
    return array


MANIFEST = "searchain_index.json"
INDEX_FORMAT = "searchain-graph index"


def _package_version() -> str:
    try:
        return version("searchain-graph")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


@dataclass(frozen=True)
class IndexSummary:
    """What :func:`build_index` did.

    Attributes:
        directory: Where the index is.
        retriever: ``"bm25"`` or ``"colbert"``.
        passages: Number of passages indexed.
        seconds: Wall time of the build (reading, storing and indexing).
        size_bytes: Total size of the index directory.
    """

    directory: Path
    retriever: str
    passages: int
    seconds: float
    size_bytes: int

    @property
    def passages_per_second(self) -> float:
        """Build throughput."""
        return self.passages / self.seconds if self.seconds > 0 else float("inf")


def _recover(directory: Path) -> Path:
    """Put back the previous index if a build was killed between its two renames; returns ``DIR.old``."""
    old = directory.with_name(directory.name + ".old")
    if not directory.exists() and (old / MANIFEST).is_file():
        old.rename(directory)
    return old


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of an index directory.

    Raises:
        FileNotFoundError: ``directory`` is not an index (no ``searchain_index.json``).
    """
    _recover(Path(directory))
    path = Path(directory) / MANIFEST
    if not path.is_file():
        raise FileNotFoundError(
            f"{directory} is not a searchain index (no {MANIFEST}); build one with `searchain index`"
        )
    manifest: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if manifest.get("format") != INDEX_FORMAT:
        raise ValueError(f"{path}: not a searchain-graph index manifest")
    return manifest


def _dir_size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def check_index_target(directory: str | Path) -> None:
    """Refuse ``directory`` as where to build an index unless it is absent, empty or an index.

    Called before any work, so that a wrong ``--out`` costs nothing.

    Raises:
        FileExistsError: ``directory`` (or a folder above it) is a file, or ``directory`` holds
            files but no index; the message names the path.
    """
    out = Path(directory)
    for above in reversed(out.parents):
        if above.exists() and not above.is_dir():
            raise FileExistsError(f"{above} is a file, not a directory: cannot build the index {out} under it")
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a directory: refusing to replace it with an index")
    if out.is_dir() and not (out / MANIFEST).is_file() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not a searchain index: refusing to replace it")


def write_index(
    directory: str | Path,
    retriever: str,
    sources: Sequence[str],
    write: Callable[[Path, Callable[[int], None] | None], int],
    *,
    progress: Callable[[int], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> IndexSummary:
    """Build into ``DIR.partial`` and rename it to ``DIR`` only when complete.

    A corpus error half-way leaves any existing index at ``directory`` untouched, and no
    ``DIR.partial``: a build that fails, however, deletes it.

    Raises:
        FileExistsError: ``directory`` is a file, or a directory that is not an index (checked
            before the build and again before the swap).
    """
    out = Path(directory)
    check_index_target(out)
    partial = out.with_name(out.name + ".partial")
    old = _recover(out)
    shutil.rmtree(old, ignore_errors=True)  # a build killed after its swap left the previous index there
    shutil.rmtree(partial, ignore_errors=True)  # a killed build's leftovers
    partial.mkdir(parents=True)
    try:
        started = time.perf_counter()
        count = write(partial, progress)
        seconds = time.perf_counter() - started
        manifest = {
            "format": INDEX_FORMAT,
            "version": 1,
            "retriever": retriever,
            "passages": count,
            "sources": [str(s) for s in sources],
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "build_seconds": round(seconds, 3),
            "searchain_graph": _package_version(),
            **(extra or {}),
        }
        write_aside(partial / MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        if out.exists():
            check_index_target(out)  # again: something may have appeared there during the build
            out.rename(old)  # two renames: at every instant DIR is a whole index, or absent with DIR.old whole
        partial.rename(out)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    return IndexSummary(out, retriever, count, seconds, _dir_size(out))
