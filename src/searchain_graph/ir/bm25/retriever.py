"""BM25 as a LangChain retriever, in memory or over a saved index directory.

The engine (tokenising, the index, scoring) is the rest of :mod:`searchain_graph.ir.bm25`; this
module adapts :class:`~searchain_graph.ir.bm25.index.BM25Index` to LangChain's ``BaseRetriever``
and to index directories (:mod:`searchain_graph.ir.index_dir`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, model_validator

from searchain_graph.ir.bm25.index import BM25Index
from searchain_graph.ir.corpus import PassageStore, load_corpus, passage_text, scored_document, write_passages
from searchain_graph.ir.index_dir import IndexSummary, read_manifest, write_index


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

        return write_index(directory, "bm25", sources, write)

    def __len__(self) -> int:
        return len(self._docs)

    @property
    def cache_key(self) -> str:
        """Names this retriever's index by its content, for cached retrievals (``cache`` of the graph).

        Raises:
            RuntimeError: the retriever has no index.
        """
        if self._index is None:
            raise RuntimeError("BM25Retriever has no index: build it with from_documents() or from_files()")
        return f"bm25:{self._index.fingerprint()}:{len(self._docs)}"

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        if self._index is None:
            raise RuntimeError("BM25Retriever has no index: build it with from_documents() or from_files()")
        ids, scores = self._index.search(query, self.k if k is None else k)
        return [scored_document(self._docs[int(i)], float(s), int(i)) for i, s in zip(ids, scores, strict=True)]

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        # A search takes about a millisecond: running it inline beats a thread hop. (The inherited
        # version would also reject ``ainvoke(q, k=n)``.)
        return self._get_relevant_documents(query, run_manager=run_manager.get_sync(), k=k)
