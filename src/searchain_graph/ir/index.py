"""Build an index directory from corpus files, and open one again.

SearChain retrieves the top-1 passage for every query of a chain. The paper uses
ColBERTv2 (:class:`~searchain_graph.ir.colbert.ColBERTRetriever`, ``pip install
'searchain-graph[colbert]'``); the embedded default is BM25
(:class:`~searchain_graph.ir.bm25.retriever.BM25Retriever`, Snowball-stemmed, see
:mod:`searchain_graph.ir.bm25`), which needs no model weights and indexes tens of thousands of
passages per second. Any LangChain ``BaseRetriever`` can replace either.

:func:`build_index` writes an index directory (the layout is in :mod:`searchain_graph.ir.index_dir`);
:func:`load_index` opens one again with the retriever that built it, without re-reading or
re-encoding the corpus.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Literal

from langchain_core.retrievers import BaseRetriever

from searchain_graph.ir.bm25.build import build_bm25
from searchain_graph.ir.bm25.retriever import BM25Retriever
from searchain_graph.ir.corpus import iter_passages, joined_text
from searchain_graph.ir.index_dir import MANIFEST, IndexSummary, check_index_target, read_manifest, write_index
from searchain_graph.ir.passage_store import store_passages
from searchain_graph.ir.remote import RemoteRetriever, is_url

RetrieverName = Literal["bm25", "tantivy", "colbert"]


def build_index(
    paths: str | Path | Sequence[str | Path],
    directory: str | Path,
    *,
    retriever: RetrieverName = "bm25",
    checkpoint: str | None = None,
    workers: int | None = None,
    k1: float = 1.5,
    b: float = 0.75,
    progress: Callable[[int], None] | None = None,
) -> IndexSummary:
    """Index corpus files into ``directory``, streaming them in one pass.

    Args:
        paths: Corpus files (see :mod:`searchain_graph.ir.corpus` for the formats).
        directory: The index directory; an index already there is replaced once the new
            one is complete.
        retriever: ``"bm25"``, ``"tantivy"`` (needs ``searchain-graph[tantivy]``, see
            :mod:`~searchain_graph.ir.tantivy_index`) or ``"colbert"`` (needs ``searchain-graph[colbert]``).
        checkpoint: ColBERT checkpoint (hub name or local directory); ColBERT only.
        workers: BM25 tokenising processes, tantivy's indexing threads (``None``: one per core).
        k1: BM25's term-frequency saturation (Lucene and Pyserini default to 1.2 and 0.9);
            tantivy's is fixed at 1.2.
        b: BM25's length normalisation (Pyserini's MS MARCO setting is 0.4); tantivy's is 0.75.
        progress: Called with the number of passages indexed since the last call.

    Raises:
        FileNotFoundError: a corpus file is missing.
        CorpusFormatError: a line is not a passage (nothing is written then).
        ValueError: an unknown retriever, an empty corpus, or BM25 parameters tantivy cannot take.
        FileExistsError: ``directory`` is a file, or a directory that is not an index (refused
            before anything is read or loaded).
    """
    check_index_target(directory)
    sources = [str(paths)] if isinstance(paths, (str, Path)) else [str(p) for p in paths]

    def stored_texts(out: Path) -> Iterator[str]:
        """Each passage's indexed text, as it is written to the passage store in ``out``."""
        return (joined_text(text, metadata) for text, metadata in store_passages(iter_passages(paths), out))

    if retriever == "bm25":

        def write(out: Path, report: Callable[[int], None] | None) -> int:
            return build_bm25(stored_texts(out), out, k1=k1, b=b, workers=workers, progress=report)

        return write_index(directory, "bm25", sources, write, progress=progress)
    if retriever == "tantivy":
        from searchain_graph.ir import tantivy_index as tv

        if (k1, b) not in ((1.5, 0.75), (tv.K1, tv.B)):
            raise ValueError(f"tantivy's BM25 is fixed at k1={tv.K1}, b={tv.B}; got k1={k1}, b={b}")
        tv.require_tantivy()  # fail before reading the corpus when the package is missing

        def write_tantivy(out: Path, report: Callable[[int], None] | None) -> int:
            return tv.build_tantivy(stored_texts(out), out, threads=workers, progress=report)

        extra = {"tokenizer": "en_stem", "bm25": {"k1": tv.K1, "b": tv.B}}
        return write_index(directory, "tantivy", sources, write_tantivy, progress=progress, extra=extra)
    if retriever == "colbert":
        from searchain_graph.ir.colbert import build_colbert_index

        return build_colbert_index(paths, directory, checkpoint=checkpoint, progress=progress)
    raise ValueError(f"unknown retriever {retriever!r}: use 'bm25', 'tantivy' or 'colbert'")


def load_index(directory: str | Path, *, k: int = 1) -> BaseRetriever:
    """Open an index directory with the retriever that built it, or a served index by its URL.

    ``directory`` may be an ``http://`` or ``https://`` URL of a ColBERTv2-protocol server
    (``searchain serve-index``, DSPy's ColBERTv2 servers): a
    :class:`~searchain_graph.ir.remote.RemoteRetriever` then queries it.

    Raises:
        FileNotFoundError: ``directory`` is not an index.
    """
    if isinstance(directory, str) and is_url(directory):
        return RemoteRetriever(url=directory, k=k)
    manifest = read_manifest(directory)
    kind = manifest.get("retriever")
    if kind == "bm25":
        return BM25Retriever.load(directory, k=k)
    if kind == "tantivy":
        from searchain_graph.ir.tantivy_index import TantivyRetriever

        return TantivyRetriever.load(directory, k=k)
    if kind == "colbert":
        from searchain_graph.ir.colbert import ColBERTRetriever

        return ColBERTRetriever.load(directory, k=k)
    raise ValueError(f"{directory}: unknown retriever {kind!r} in {MANIFEST}")
