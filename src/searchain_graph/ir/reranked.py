"""A retriever's top passages re-ranked by a reader: :class:`ReaderReranked`.

The paper's IR check reads one passage per node query, the retriever's first. The reader's
confidence *f* is a relevance logit for the query (:mod:`searchain_graph.ir.readers.base`), so
reading the retriever's top ``depth`` and putting the surest first makes the node's one passage
the most relevant of ``depth``, for every method that retrieves: SearChain, IRCoT and direct
retrieval alike get the same passages for the same query.

Measured without the LLM on HotpotQA development questions (``benchmarks/retrieval_candidates.py``,
the node queries of 100 questions' SearChain trees): BM25's top 1 held a supporting paragraph for
59.7% of the node queries, BM25's top 5 re-ranked by the bundled reader for 64.3%; the questions
where some node's top 1 was the paragraph holding the answer went from 49 to 61 of 100.
"""

from __future__ import annotations

from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict, field_validator

from searchain_graph.ir.identity import component_key
from searchain_graph.ir.readers.base import ReaderOutput, aread_pairs, passage_of, read_pairs, usable_confidence
from searchain_graph.ir.retriever_calls import takes_k

__all__ = ["ReaderReranked"]


class ReaderReranked(BaseRetriever):
    """``retriever``'s top ``depth`` passages for a query, the one ``reader`` is surest of first.

    A query asking for ``k`` passages gets ``max(k, depth)`` from ``retriever``; the first
    ``depth`` are read (one batch) and ordered by the reader's confidence, highest first (a
    reading without a confidence last, ties in the retriever's order); the rest follow in the
    retriever's order; the first ``k`` are returned. Each document's metadata gains
    ``rerank_confidence`` (the reader's *f*) and ``retriever_rank`` (1-based).

    Args:
        retriever: Any LangChain retriever; it is asked for ``k=`` passages when it takes ``k``
            (the package's retrievers do), else it gives what it gives.
        reader: A reader (``read`` or ``read_batch``, :mod:`searchain_graph.ir.readers.base`).
        depth: How many of the retriever's passages are read and re-ranked (at least 2).
        k: Passages returned by default (a query's ``k=`` overrides it).

    Example:
        >>> reranked = ReaderReranked(retriever=bm25, reader=BundledReader(), depth=5)  # doctest: +SKIP
        >>> graph = create_searchain_graph(llm, reranked, reader)  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: BaseRetriever
    reader: Any
    depth: int = 5
    k: int = 1

    @field_validator("depth")
    @classmethod
    def _check_depth(cls, depth: int) -> int:
        if depth < 2:
            raise ValueError(f"depth must be at least 2 (1 re-ranks nothing), got {depth}")
        return depth

    @field_validator("k")
    @classmethod
    def _check_k(cls, k: int) -> int:
        if k < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        return k

    @field_validator("reader")
    @classmethod
    def _check_reader(cls, reader: Any) -> Any:
        if not callable(getattr(reader, "read", None)) and not callable(getattr(reader, "read_batch", None)):
            raise TypeError(f"reader must have read(query, passage) or read_batch(pairs), got {type(reader).__name__}")
        return reader

    @property
    def cache_key(self) -> str:
        """The retriever's and the reader's keys and the depth; empty when either has no stable key."""
        inner, reader = component_key(self.retriever), component_key(self.reader)
        return f"{inner}|{reader}|depth={self.depth}" if inner and reader else ""

    def _ask(self, k: int | None, *, sync: bool) -> tuple[int, dict[str, Any]]:
        wanted = self.k if k is None else int(k)
        if wanted < 1:
            raise ValueError(f"k must be at least 1, got {k}")
        given = takes_k(self.retriever)[0 if sync else 1]
        return wanted, ({"k": max(wanted, self.depth)} if given else {})

    def _ordered(self, docs: list[Document], outputs: list[ReaderOutput], k: int) -> list[Document]:
        scored = []
        for rank, (doc, output) in enumerate(zip(docs[: len(outputs)], outputs, strict=True), start=1):
            confidence = usable_confidence(output.confidence)
            metadata = {**doc.metadata, "rerank_confidence": confidence, "retriever_rank": rank}
            kept = Document(doc.page_content, metadata=metadata)
            scored.append((confidence is None, -(confidence or 0.0), rank, kept))
        head = [doc for *_, doc in sorted(scored, key=lambda s: s[:3])]
        tail = [
            Document(d.page_content, metadata={**d.metadata, "retriever_rank": i})
            for i, d in enumerate(docs[len(outputs) :], start=len(outputs) + 1)
        ]
        return (head + tail)[:k]

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        wanted, asked = self._ask(k, sync=True)
        docs = list(self.retriever.invoke(query, config={"callbacks": run_manager.get_child()}, **asked))
        top = docs[: self.depth]
        outputs = read_pairs(self.reader, [(query, passage_of(d)) for d in top])
        return self._ordered(docs, outputs, wanted)

    async def _aget_relevant_documents(
        self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun, k: int | None = None
    ) -> list[Document]:
        wanted, asked = self._ask(k, sync=False)
        docs = list(await self.retriever.ainvoke(query, config={"callbacks": run_manager.get_child()}, **asked))
        top = docs[: self.depth]
        outputs = await aread_pairs(self.reader, [(query, passage_of(d)) for d in top])
        return self._ordered(docs, outputs, wanted)
