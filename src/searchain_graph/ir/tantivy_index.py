"""tantivy as an index backend: ``searchain index --retriever tantivy`` (``pip install 'searchain-graph[tantivy]'``).

`tantivy <https://github.com/quickwit-oss/tantivy>`_ is a Rust search library in Lucene's mould
(segments, skip lists, block-max WAND), maintained by Quickwit, with wheels on PyPI. At 5M
passages it built in half the memory of the package's own BM25 engine and 0.8 of its disk, a
little faster, but answered the benchmark's questions about 2x slower, stopwords being part of
its queries (``docs/retrieval.md``, "tantivy as a backend"): this module offers it as a backend
where disk or memory is what runs out, rather than competing with it.

The index directory is the usual one (:mod:`~searchain_graph.ir.index_dir`): the passages in a
:class:`~searchain_graph.ir.corpus.PassageStore` (so that a hit's ``pid`` is its row there, as
for BM25 and ColBERT) and tantivy's segments under ``tantivy/``. Title and text are indexed as
one field with tantivy's ``en_stem`` tokenizer (lower-cased, English Snowball stems, no stopword
list); scores are Lucene's BM25 with tantivy's fixed k1 = 1.2, b = 0.75.

Queries are reduced to their words before tantivy's query parser sees them, so that a question
holding ``AND``, ``title:``, quotes, brackets or a leading ``-`` is a bag of words like any
other, never a syntax error.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, PrivateAttr, model_validator

from searchain_graph.ir.corpus import PassageStore, scored_document
from searchain_graph.ir.index_dir import read_manifest

SUBDIR = "tantivy"
"""tantivy's segments, inside the index directory."""

K1, B = 1.2, 0.75
"""tantivy's BM25 parameters (fixed by the library)."""

HEAP_BYTES = 512 * 1024 * 1024
"""The indexing writer's memory budget, shared by its threads: the build's memory stays near it."""

_WORD = re.compile(r"\w+")


def require_tantivy() -> Any:
    """The ``tantivy`` module.

    Raises:
        ImportError: it is not installed, saying how to install it.
    """
    try:
        import tantivy
    except ImportError as exc:
        raise ImportError(
            f"the tantivy backend needs the tantivy package: pip install 'searchain-graph[tantivy]' ({exc})"
        ) from exc
    return tantivy


def build_tantivy(
    texts: Iterable[str],
    out: Path,
    *,
    threads: int | None = None,
    heap_bytes: int = HEAP_BYTES,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Index ``texts`` (row ``i`` is passage ``i``) into ``out / "tantivy"``; returns how many.

    Args:
        texts: Each passage's title and text, in store order.
        out: The index directory being built.
        threads: Indexing threads (``None``: one per core, at most 8).
        heap_bytes: The writer's memory budget, shared by its threads.
        progress: Called with the number of passages added since the last call.
    """
    tantivy = require_tantivy()
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("body", stored=False, tokenizer_name="en_stem")
    builder.add_unsigned_field("pid", stored=True, indexed=False)
    (out / SUBDIR).mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(builder.build(), path=str(out / SUBDIR))
    threads = threads or min(8, os.cpu_count() or 1)
    writer = index.writer(heap_size=max(heap_bytes, threads * 16 * 1024 * 1024), num_threads=threads)
    count = reported = 0
    try:
        for count, text in enumerate(texts, start=1):
            doc = tantivy.Document()
            doc.add_text("body", text)
            doc.add_unsigned("pid", count - 1)
            writer.add_document(doc)
            if progress is not None and count - reported >= 10_000:
                progress(count - reported)
                reported = count
        writer.commit()
    except BaseException:
        writer.rollback()  # stop the indexing threads before the caller deletes their directory
        writer.wait_merging_threads()
        raise
    writer.wait_merging_threads()
    if progress is not None and count > reported:
        progress(count - reported)
    return count


def words_query(query: str) -> str:
    """``query`` as tantivy query syntax that means "any of these words": its words, lower-cased."""
    return " ".join(_WORD.findall(query.lower()))


class TantivyRetriever(BaseRetriever):
    """A LangChain retriever over an index built by ``searchain index --retriever tantivy``.

    Hits carry ``score`` (tantivy's BM25) and ``pid`` (the passage's row) in their metadata, as
    :class:`~searchain_graph.ir.bm25.retriever.BM25Retriever`'s do. A query with no word
    returns no documents.

    Example:
        >>> retriever = TantivyRetriever(index_dir="indexes/wiki", k=1)  # doctest: +SKIP
        >>> retriever.invoke("Where was Kevin Drew born?")  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    index_dir: str
    """The index directory."""
    k: int = 1
    """Passages per query; ``invoke(q, k=n)`` overrides it."""

    _index: Any = PrivateAttr(default=None)
    _searcher: Any = PrivateAttr(default=None)
    _docs: Sequence[Document] = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _open(self) -> TantivyRetriever:
        if self._index is None:
            manifest = read_manifest(self.index_dir)
            if manifest.get("retriever") != "tantivy":
                raise ValueError(f"{self.index_dir} is a {manifest.get('retriever')!r} index, not a tantivy one")
            self._index = require_tantivy().Index.open(str(Path(self.index_dir) / SUBDIR))
            self._searcher = self._index.searcher()
            self._docs = PassageStore(self.index_dir)
        return self

    @classmethod
    def load(cls, directory: str | Path, *, k: int = 1) -> TantivyRetriever:
        """Open an index directory built with ``--retriever tantivy``."""
        return cls(index_dir=str(directory), k=k)

    def __len__(self) -> int:
        return len(self._docs)

    def search(self, query: str, k: int) -> list[tuple[int, float]]:
        """``(pid, score)`` of the top ``k`` passages, best first."""
        text = words_query(query)
        if not text or k < 1:
            return []
        hits = self._searcher.search(self._index.parse_query(text, ["body"]), k).hits
        return [(int(self._searcher.doc(address)["pid"][0]), float(score)) for score, address in hits]

    def _documents(self, hits: list[tuple[int, float]]) -> list[Document]:
        return [scored_document(self._docs[pid], score, pid) for pid, score in hits]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self._documents(self.search(query, k or self.k))

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        return self._documents(await asyncio.to_thread(self.search, query, k or self.k))
