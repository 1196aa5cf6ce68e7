"""A BM25 engine in NumPy: fast to build, fast to query, saved as memory-mappable arrays.

This is the engine behind :class:`~searchain_graph.ir.bm25_retriever.BM25Retriever`. It is
Lucene's BM25 (``k1 = 1.5``, ``b = 0.75``, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``)
over Snowball-stemmed words with English stopwords removed, the same scoring as
``bm25s``' default, which the first version of this package used. It exists because
building had to reach tens of thousands of passages per second on two cores, and
querying a few milliseconds at 100k passages, which needed:

* **tokenising without a Python object per match**, and **counting in NumPy** per chunk
  of passages, in worker processes when the corpus is large
  (:mod:`searchain_graph.ir.bm25_count`);
* **a build in bounded memory**: sorted shards spilled to disk and merged by stem range
  (:mod:`searchain_graph.ir.bm25_build`), so a corpus of any size builds in a few GB;
* **precomputed scores** stored column-wise (one slice of passage ids and scores per
  stem), so a query adds up a few slices with ``np.bincount``.

An index is four ``.npy`` arrays and a JSON file with the vocabulary and parameters;
:meth:`BM25Index.load` memory-maps the arrays, so loading is instant and a large index
is paged in on demand.
"""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from searchain_graph.ir.bm25_count import (
    ARRAYS,
    FORMAT_VERSION,
    MAX_SCORES,
    PARAMS_FILE,
    STOPWORDS,
    _Stemmer,
    split_words,
)
from searchain_graph.ir.index_dir import load_array

__all__ = ["ARRAYS", "FORMAT_VERSION", "PARAMS_FILE", "STOPWORDS", "BM25Index", "split_words"]

_STEMMER_LOCK = threading.Lock()


class BM25Index:
    """A built BM25 index: precomputed per-stem score slices over ``num_docs`` passages.

    Build it with :meth:`build`, query it with :meth:`search`, persist it with
    :meth:`save` and :meth:`load`.
    """

    def __init__(
        self,
        *,
        vocab: dict[str, int],
        data: npt.NDArray[np.float32],
        indices: npt.NDArray[np.int32],
        indptr: npt.NDArray[np.int64],
        doc_lengths: npt.NDArray[np.int32],
        k1: float,
        b: float,
        max_scores: npt.NDArray[np.float32] | None = None,
    ) -> None:
        """Wrap built arrays; use :meth:`build` or :meth:`load` rather than calling this.

        ``max_scores`` (each stem's highest score) lets :meth:`search` skip long posting lists
        that cannot change the top k; an index without it (built before it existed) reads them.
        """
        self.vocab = vocab
        self.data = data
        self.indices = indices
        self.indptr = indptr
        self.doc_lengths = doc_lengths
        self.k1 = k1
        self.b = b
        self.max_scores = max_scores
        self._stemmer: _Stemmer | None = None

    @property
    def num_docs(self) -> int:
        """Number of indexed passages."""
        return int(self.doc_lengths.shape[0])

    @classmethod
    def build(
        cls,
        texts: Iterable[str],
        *,
        k1: float = 1.5,
        b: float = 0.75,
        workers: int | None = None,
        chunk_size: int = 8192,
        progress: Callable[[int], None] | None = None,
    ) -> BM25Index:
        """Index ``texts`` (streamed: any iterable, consumed once) and hold the index in memory.

        The build is :func:`~searchain_graph.ir.bm25_build.build_bm25` (bounded memory, shards
        on disk) into a temporary directory, read back whole. For an index on disk, call that
        function (``build_index`` and ``searchain index`` do).

        Args:
            texts: Passage texts, in passage-id order.
            k1: BM25 term-frequency saturation.
            b: BM25 length normalisation.
            workers: Tokenising processes. ``None``: one per CPU core (at most 8) once the
                corpus exceeds one chunk; ``1``: tokenise in this process.
            chunk_size: Passages per unit of work.
            progress: Called with the number of passages of each finished chunk.

        Raises:
            ValueError: ``texts`` is empty.
        """
        from searchain_graph.ir.bm25_build import build_bm25

        with tempfile.TemporaryDirectory(prefix="searchain-bm25-") as scratch:
            build_bm25(texts, scratch, k1=k1, b=b, workers=workers, chunk_size=chunk_size, progress=progress)
            return cls.load(scratch, mmap=False)

    def query_terms(self, query: str) -> list[int]:
        """The distinct stem ids of ``query`` that occur in the index."""
        if self._stemmer is None:
            with _STEMMER_LOCK:
                if self._stemmer is None:
                    self._stemmer = _Stemmer()
        words = list(dict.fromkeys(split_words(query)))
        ids = (self.vocab.get(stem) for stem in self._stemmer.stems(words) if stem is not None)
        return list(dict.fromkeys(i for i in ids if i is not None))

    def search(self, query: str, k: int = 10) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The ``k`` best passages for ``query``: ``(ids, scores)``, best first.

        Only passages sharing a stem with the query are returned (so possibly fewer
        than ``k``, or none). Ties are broken by passage id.
        """
        terms = self.query_terms(query)
        if not terms or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        if self.max_scores is not None and len(terms) > 1:
            candidates, cand_scores = self._pruned(terms, k)
        else:
            candidates, cand_scores = self._exhaustive(terms)
        if len(candidates) > k:
            kth = np.partition(cand_scores, len(cand_scores) - k)[len(cand_scores) - k]
            keep = cand_scores >= kth
            candidates, cand_scores = candidates[keep], cand_scores[keep]
        order = np.lexsort((candidates, -cand_scores))[:k]
        return candidates[order].astype(np.int64), cand_scores[order].astype(np.float32)

    def _accumulate(
        self, candidates: npt.NDArray[np.int64], scores: npt.NDArray[Any], term: int
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
        """Add every passage of ``term`` to the candidates: sparse for short lists, dense for long ones."""
        postings = slice(int(self.indptr[term]), int(self.indptr[term + 1]))
        docs, weights = np.asarray(self.indices[postings]), np.asarray(self.data[postings])
        if 8 * (len(candidates) + len(docs)) > self.num_docs:
            dense = np.bincount(docs, weights=weights, minlength=self.num_docs)
            dense[candidates] += scores
            found = np.flatnonzero(dense)
            return found.astype(np.int64), dense[found]
        merged, inverse = np.unique(np.concatenate([candidates, docs]), return_inverse=True)
        summed = np.bincount(inverse, weights=np.concatenate([scores, weights]), minlength=len(merged))
        return merged.astype(np.int64), summed

    def _exhaustive(self, terms: list[int]) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
        """Every passage sharing a stem with the query, with its full score."""
        slices = [slice(int(self.indptr[t]), int(self.indptr[t + 1])) for t in terms]
        docs = np.concatenate([self.indices[s] for s in slices])
        weights = np.concatenate([self.data[s] for s in slices])
        if self.num_docs <= 4 * len(docs) or self.num_docs <= 2_000_000:
            dense = np.bincount(docs, weights=weights, minlength=self.num_docs)
            candidates = np.flatnonzero(dense)
            return candidates.astype(np.int64), dense[candidates]
        found, inverse = np.unique(docs, return_inverse=True)
        return found.astype(np.int64), np.bincount(inverse, weights=weights)

    def _pruned(self, terms: list[int], k: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[Any]]:
        """MaxScore (Turtle and Flood, 1995): the exact top ``k`` without reading every long posting list.

        Stems are taken shortest list first (rare stems: the highest score bounds). Once ``k``
        candidates exist, their ``k``-th best partial score is a lower bound of the final
        ``k``-th score; when the stems left could add up to less than that (their stored maximum
        scores), no passage outside the candidates can enter the top ``k``. The stems left then
        only complete the candidates' scores, by binary search in their lists (sorted by passage).
        """
        starts = self.indptr[terms]
        order = np.argsort(self.indptr[np.asarray(terms) + 1] - starts, kind="stable")
        assert self.max_scores is not None
        bounds = np.asarray(self.max_scores)[np.asarray(terms)[order]].astype(np.float64)
        left = np.cumsum(bounds[::-1])[::-1]  # left[i]: the most stems i.. can still add
        candidates, scores = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        full = len(order)
        for i, j in enumerate(order):
            if len(candidates) >= k:
                theta = np.partition(scores, len(scores) - k)[len(scores) - k]
                if left[i] * (1 + 1e-5) < theta:
                    full = i
                    break
            candidates, scores = self._accumulate(candidates, scores, terms[j])
        for j in order[full:]:
            start, stop = int(self.indptr[terms[j]]), int(self.indptr[terms[j] + 1])
            docs = self.indices[start:stop]  # a view: a memory-mapped list is read only where searched
            at = np.minimum(np.searchsorted(docs, candidates), stop - start - 1)
            hit = np.asarray(docs[at]) == candidates
            scores[hit] += np.asarray(self.data[start:stop][at[hit]], dtype=np.float64)
        return candidates, scores

    def save(self, directory: str | Path) -> None:
        """Write the index to ``directory`` (created if needed)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ARRAYS:
            np.save(directory / f"bm25_{name}.npy", getattr(self, name))
        if self.max_scores is not None:
            np.save(directory / f"bm25_{MAX_SCORES}.npy", self.max_scores)
        params = {"format_version": FORMAT_VERSION, "k1": self.k1, "b": self.b, "vocab": self.vocab}
        (directory / PARAMS_FILE).write_text(json.dumps(params, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = True) -> BM25Index:
        """Load an index written by :meth:`save`; arrays are memory-mapped unless ``mmap=False``.

        Raises:
            FileNotFoundError: ``directory`` holds no BM25 index.
            ValueError: the index was written by an incompatible version.
        """
        directory = Path(directory)
        params_path = directory / PARAMS_FILE
        if not params_path.is_file():
            raise FileNotFoundError(f"no BM25 index in {directory} (missing {PARAMS_FILE})")
        params = json.loads(params_path.read_text(encoding="utf-8"))
        if params.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"{params_path}: BM25 index format {params.get('format_version')!r}, expected {FORMAT_VERSION}; "
                "rebuild it with `searchain index`"
            )
        arrays = {name: load_array(directory / f"bm25_{name}.npy", mmap=mmap) for name in ARRAYS}
        bounds = directory / f"bm25_{MAX_SCORES}.npy"
        if bounds.is_file():
            arrays["max_scores"] = load_array(bounds, mmap=mmap)
        return cls(vocab=params["vocab"], k1=float(params["k1"]), b=float(params["b"]), **arrays)
