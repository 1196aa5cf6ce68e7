"""Retrievers and on-disk indexes.

SearChain retrieves the top-1 passage for every query of a chain. The paper uses
ColBERTv2 (:class:`~searchain_graph.colbert.ColBERTRetriever`, ``pip install
'searchain-graph[colbert]'``); the embedded default is BM25 (:class:`BM25Retriever`,
Snowball-stemmed, see :mod:`searchain_graph.bm25`), which needs no model weights and
indexes tens of thousands of passages per second. Any LangChain ``BaseRetriever`` can
replace either.

An index directory (written by :func:`build_index` or ``searchain index``) holds:

* ``searchain_index.json``: which retriever built it, from which files, how many passages;
* ``passages.jsonl`` and ``passages.offsets.npy``: the passages (a :class:`PassageStore`);
* the retriever's own files (``bm25_*.npy`` and ``bm25.json`` for BM25).

:func:`load_index` opens one again without re-reading or re-encoding the corpus.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, model_validator

from searchain_graph.bm25 import BM25Index
from searchain_graph.corpus import (
    CorpusFormatError,
    PassageStore,
    iter_corpora,
    iter_corpus,
    load_corpus,
    passage_text,
    write_passages,
)

__all__ = [
    "BM25Retriever",
    "CorpusFormatError",
    "IndexSummary",
    "build_index",
    "iter_corpus",
    "load_corpus",
    "load_index",
    "passage_text",
    "read_manifest",
]

MANIFEST = "searchain_index.json"
INDEX_FORMAT = "searchain-graph index"
RetrieverName = Literal["bm25", "colbert"]


def _package_version() -> str:
    try:
        return version("searchain-graph")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "unknown"


def _with_score(doc: Document, score: float) -> Document:
    return Document(page_content=doc.page_content, metadata={**doc.metadata, "score": score})


class BM25Retriever(BaseRetriever):
    """BM25 as a LangChain retriever, in memory or over a saved index directory.

    Build it with :meth:`from_documents` or :meth:`from_files`, save it with
    :meth:`save`, and open a saved one with ``BM25Retriever(index_dir=DIR)`` (or
    :func:`load_index`). Titles are indexed with the text. Queries that share no
    stem with the corpus return no documents rather than an arbitrary passage.

    Example:
        >>> retriever = BM25Retriever.from_files(["corpus.jsonl"], k=1)  # doctest: +SKIP
        >>> retriever.invoke("Where was Kevin Drew born?")  # doctest: +SKIP
        >>> BM25Retriever(index_dir="index/", k=3).invoke("Kevin Drew", k=1)  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    k: int = 1
    """Passages returned per query (SearChain uses the top-1); ``invoke(q, k=n)`` overrides it."""
    index_dir: str | None = None
    """A directory written by :meth:`save` or ``searchain index``, loaded on construction."""

    _docs: Sequence[Document] = PrivateAttr(default_factory=list)
    _index: BM25Index | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _load_index_dir(self) -> BM25Retriever:
        if self.index_dir is not None and self._index is None:
            directory = Path(self.index_dir)
            manifest = read_manifest(directory)
            if manifest.get("retriever") != "bm25":
                raise ValueError(f"{directory} is a {manifest.get('retriever')!r} index, not a BM25 one")
            self._index = BM25Index.load(directory)
            self._docs = PassageStore(directory)
        return self

    @classmethod
    def from_documents(
        cls, documents: Iterable[Document], *, k: int = 1, workers: int | None = None, **kwargs: Any
    ) -> BM25Retriever:
        """Index ``documents`` in memory and return a retriever over them.

        Raises:
            ValueError: ``documents`` is empty.
        """
        docs = list(documents)
        if not docs:
            raise ValueError("cannot build a BM25 index over an empty corpus")
        retriever = cls(k=k, **kwargs)
        retriever._index = BM25Index.build((passage_text(d) for d in docs), workers=workers)
        retriever._docs = docs
        return retriever

    @classmethod
    def from_files(cls, paths: str | Path | Sequence[str | Path], *, k: int = 1, **kwargs: Any) -> BM25Retriever:
        """Load corpus files (see :func:`load_corpus`) and index them in memory."""
        return cls.from_documents(load_corpus(paths), k=k, **kwargs)

    @classmethod
    def load(cls, directory: str | Path, *, k: int = 1) -> BM25Retriever:
        """Open an index directory written by :meth:`save` or ``searchain index --retriever bm25``."""
        return cls(index_dir=str(directory), k=k)

    def save(self, directory: str | Path, *, sources: Sequence[str] = ()) -> IndexSummary:
        """Write this retriever's passages and index to ``directory`` (replacing an index there).

        Raises:
            RuntimeError: the retriever has no index.
        """
        if self._index is None:
            raise RuntimeError("BM25Retriever has no index: build it with from_documents() or from_files()")
        index = self._index

        def write(out: Path, _report: Callable[[int], None] | None) -> int:
            for _ in write_passages(self._docs, out):
                pass
            index.save(out)
            return len(self._docs)

        return _write_index(directory, "bm25", sources, write)

    def __len__(self) -> int:
        return len(self._docs)

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        if self._index is None:
            raise RuntimeError("BM25Retriever has no index: build it with from_documents() or from_files()")
        ids, scores = self._index.search(query, self.k if k is None else k)
        return [_with_score(self._docs[int(i)], float(s)) for i, s in zip(ids, scores, strict=True)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        # A search takes about a millisecond: running it inline beats a thread hop. (The inherited
        # version would also reject ``ainvoke(q, k=n)``.)
        return self._get_relevant_documents(query, run_manager=run_manager.get_sync(), k=k)


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


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of an index directory.

    Raises:
        FileNotFoundError: ``directory`` is not an index (no ``searchain_index.json``).
    """
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


def _write_index(
    directory: str | Path,
    retriever: str,
    sources: Sequence[str],
    write: Callable[[Path, Callable[[int], None] | None], int],
    *,
    progress: Callable[[int], None] | None = None,
    extra: dict[str, Any] | None = None,
) -> IndexSummary:
    """Build into ``DIR.partial`` and rename it to ``DIR`` only when complete.

    A corpus error half-way leaves any existing index at ``directory`` untouched.
    """
    out = Path(directory)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    started = time.perf_counter()
    try:
        count = write(partial, progress)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
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
    (partial / MANIFEST).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if out.exists():
        if not (out / MANIFEST).is_file() and any(out.iterdir()):
            shutil.rmtree(partial, ignore_errors=True)
            raise FileExistsError(f"{out} exists and is not a searchain index: refusing to replace it")
        shutil.rmtree(out)
    partial.rename(out)
    return IndexSummary(out, retriever, count, seconds, _dir_size(out))


def build_index(
    paths: str | Path | Sequence[str | Path],
    directory: str | Path,
    *,
    retriever: RetrieverName = "bm25",
    checkpoint: str | None = None,
    workers: int | None = None,
    progress: Callable[[int], None] | None = None,
) -> IndexSummary:
    """Index corpus files into ``directory``, streaming them in one pass.

    Args:
        paths: Corpus files (see :mod:`searchain_graph.corpus` for the formats).
        directory: The index directory; an index already there is replaced once the new
            one is complete.
        retriever: ``"bm25"`` or ``"colbert"`` (needs ``searchain-graph[colbert]``).
        checkpoint: ColBERT checkpoint (hub name or local directory); ColBERT only.
        workers: BM25 tokenising processes (``None``: one per core).
        progress: Called with the number of passages indexed since the last call.

    Raises:
        FileNotFoundError: a corpus file is missing.
        CorpusFormatError: a line is not a passage (nothing is written then).
        ValueError: an unknown retriever, or an empty corpus.
    """
    sources = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]
    if retriever == "bm25":

        def write(out: Path, report: Callable[[int], None] | None) -> int:
            stored = write_passages(iter_corpora(paths), out)
            index = BM25Index.build((passage_text(d) for d in stored), workers=workers, progress=report)
            index.save(out)
            return index.num_docs

        return _write_index(directory, "bm25", sources, write, progress=progress)
    if retriever == "colbert":
        from searchain_graph.colbert import build_colbert_index

        return build_colbert_index(paths, directory, checkpoint=checkpoint, progress=progress)
    raise ValueError(f"unknown retriever {retriever!r}: use 'bm25' or 'colbert'")


def load_index(directory: str | Path, *, k: int = 1) -> BaseRetriever:
    """Open an index directory with the retriever that built it.

    Raises:
        FileNotFoundError: ``directory`` is not an index.
    """
    manifest = read_manifest(directory)
    kind = manifest.get("retriever")
    if kind == "bm25":
        return BM25Retriever.load(directory, k=k)
    if kind == "colbert":
        from searchain_graph.colbert import ColBERTRetriever

        return ColBERTRetriever.load(directory, k=k)
    raise ValueError(f"{directory}: unknown retriever {kind!r} in {MANIFEST}")
