"""A built BM25 index: searching it, saving it and loading it.

:class:`BM25Index` holds the scores precomputed per (stem, passage) and stored column-wise (CSC:
``indptr``, ``indices``, ``data``, one slice of passage ids and scores per stem), so a query adds up
a few slices. Queries are tokenised as passages are (:mod:`~searchain_graph.ir.bm25.tokenising`).
When the index stores each stem's highest score, a query of several stems is answered with MaxScore
pruning, which skips the long posting lists that cannot change the top k. :meth:`BM25Index.build`
builds an index in memory through :mod:`~searchain_graph.ir.bm25.build`, whose files
:meth:`BM25Index.save` writes and :meth:`BM25Index.load` reads (memory-mapped, so loading is instant
and a large index is paged in on demand).

:func:`retain_freed_memory` is the process-wide ``malloc`` setting that spares a process serving
queries most of its page faults.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import tempfile
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from searchain_graph.ir.bm25.build import ARRAYS, FORMAT_VERSION, MAX_SCORES, PARAMS_FILE
from searchain_graph.ir.bm25.tokenising import SnowballStemmer, split_words
from searchain_graph.ir.index_dir import load_array

__all__ = ["BM25Index", "retain_freed_memory"]

_STEMMER_LOCK = threading.Lock()


def retain_freed_memory(trim_threshold: int = 256 << 20) -> bool:
    """Ask glibc's ``malloc`` to keep freed memory for reuse rather than hand it back at once.

    A query allocates and frees a few dozen NumPy arrays of 0.1 to 2 MB. By default glibc maps
    such blocks afresh and returns freed memory to the system, so each query at 5M passages
    pays about 1,800 page faults (about 3 ms of its median 13 on this project's 2-core machine).
    With blocks up to 32 MB taken from the heap and up to ``trim_threshold`` bytes of freed
    memory kept, those faults go. The setting is process-wide and stays: ``searchain
    serve-index`` makes it; an application serving BM25 queries may call this once at start.

    Returns:
        Whether the C library took both settings (``False`` where it is not glibc).
    """
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):
        return False
    m_trim_threshold, m_mmap_threshold = -1, -3  # <malloc.h>
    return bool(mallopt(m_mmap_threshold, 32 << 20)) and bool(mallopt(m_trim_threshold, trim_threshold))


def _kept(docs: Any, scores: Any, keep: Any) -> tuple[Any, Any]:
    """``docs`` and ``scores`` where ``keep`` holds (the same arrays when it holds everywhere: no copies)."""
    if keep.all():
        return docs, scores
    return docs[keep], scores[keep]


class BM25Index:
    """A built BM25 index: precomputed per-stem score slices over ``num_docs`` passages.

    Build it with :meth:`build`, query it with :meth:`search`, persist it with
    :meth:`save` and :meth:`load`.
    """

    sparse_share = 24
    """MaxScore merges the shortest lists into candidates while their postings stay under 1/24 of
    the passages; past that, completing candidates by binary search is cheaper (measured on 40
    queries at 1M and 5M passages: 1/8 doubled the median at 5M, 1/64 and 1/128 raised it by a
    third and by 2.5x; 1/32 had the same median and a worse p95)."""
    seed_size = 512
    """Candidates scored in full first, the best by partial score, when there are more: their
    ``k``-th score prunes the others before they are completed (256 to 8,192 measured: the
    median moved by at most 1.5 ms)."""

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
        self._stemmer: SnowballStemmer | None = None
        self._fingerprint: str | None = None

    @property
    def num_docs(self) -> int:
        """Number of indexed passages."""
        return int(self.doc_lengths.shape[0])

    def fingerprint(self) -> str:
        """A digest of the index's content (its stems, postings, lengths and parameters), computed once.

        Two indexes with one fingerprint score every query alike: cached retrievals
        (:mod:`searchain_graph.method.ir_tasks`) are keyed by it. It reads every array once.
        """
        if self._fingerprint is None:
            digest = hashlib.sha256(json.dumps([FORMAT_VERSION, self.k1, self.b]).encode())
            digest.update(json.dumps(sorted(self.vocab.items()), ensure_ascii=False).encode("utf-8", "surrogatepass"))
            for name in ARRAYS:
                digest.update(np.ascontiguousarray(getattr(self, name)).tobytes())
            self._fingerprint = digest.hexdigest()
        return self._fingerprint

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

        The build is :func:`~searchain_graph.ir.bm25.build.build_bm25` (bounded memory, shards
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
        from searchain_graph.ir.bm25.build import build_bm25

        with tempfile.TemporaryDirectory(prefix="searchain-bm25-") as scratch:
            build_bm25(texts, scratch, k1=k1, b=b, workers=workers, chunk_size=chunk_size, progress=progress)
            return cls.load(scratch, mmap=False)

    def query_terms(self, query: str) -> list[int]:
        """The distinct stem ids of ``query`` that occur in the index."""
        if self._stemmer is None:
            with _STEMMER_LOCK:
                if self._stemmer is None:
                    self._stemmer = SnowballStemmer()
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

    def _postings(self, term: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.float32]]:
        start, stop = int(self.indptr[term]), int(self.indptr[term + 1])
        return self.indices[start:stop], self.data[start:stop]

    def _concatenated(self, terms: Any) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """The posting lists of ``terms`` one after another: passage ids and scores."""
        parts = [self._postings(int(t)) for t in terms]
        docs = np.concatenate([np.zeros(0, self.indices.dtype), *(d for d, _ in parts)])
        return docs, np.concatenate([np.zeros(0, self.data.dtype), *(w for _, w in parts)])

    def _merge_sparse(self, terms: Any) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """Every passage of some posting lists, sorted, with its summed score: by sorting the postings.

        A stable sort merges the sorted runs (timsort), and each passage's scores are added in list order.
        """
        docs, weights = self._concatenated(terms)
        if not len(docs):
            return docs, np.zeros(0, dtype=np.float64)
        order = np.argsort(docs, kind="stable")
        docs = docs[order]
        starts = np.flatnonzero(np.append(True, docs[1:] != docs[:-1]))
        return docs[starts], np.add.reduceat(weights[order], starts, dtype=np.float64)

    def _merge_dense(self, terms: Any, at_least: float = 0.0) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """:meth:`_merge_sparse` in one dense pass over all passages: cheaper for long lists.

        Only passages scoring ``at_least`` (when above 0) are returned.
        """
        docs, weights = self._concatenated(terms)
        dense = np.bincount(docs, weights=weights, minlength=self.num_docs)
        found = np.flatnonzero(dense >= at_least if at_least > 0 else dense > 0)
        return found.astype(self.indices.dtype), dense[found]

    def _complete(self, candidates: Any, scores: Any, term: int) -> None:
        """Add ``term``'s score to the candidates that contain it (binary search, the smaller side searched)."""
        docs, weights = self._postings(term)
        if not len(docs) or not len(candidates):
            return
        if len(candidates) <= len(docs):  # look the candidates up in the list: a few pages of a mapped list
            needles = candidates.astype(docs.dtype, copy=False)  # else searchsorted converts the whole list
            at = np.searchsorted(docs, needles)
            np.minimum(at, len(docs) - 1, out=at)
            hit = np.asarray(docs[at]) == needles
            scores[hit] += np.asarray(weights[at[hit]], dtype=np.float64)
        else:  # look the list up in the candidates
            docs, weights = np.asarray(docs).astype(candidates.dtype, copy=False), np.asarray(weights)
            at = np.searchsorted(candidates, docs)
            np.minimum(at, len(candidates) - 1, out=at)
            hit = candidates[at] == docs
            scores += np.bincount(at[hit], weights=weights[hit], minlength=len(candidates))

    def _exhaustive(self, terms: list[int]) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """Every passage sharing a stem with the query, with its full score."""
        postings = sum(int(self.indptr[t + 1] - self.indptr[t]) for t in terms)
        if self.num_docs <= 4 * postings or self.num_docs <= 2_000_000:
            return self._merge_dense(terms)
        return self._merge_sparse(terms)

    def _pruned(self, terms: list[int], k: int) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
        """MaxScore (Turtle and Flood, 1995): the exact top ``k`` without reading every long posting list.

        Stems are taken shortest list first (rare stems: the highest score bounds); ``left[i]`` is
        the most that stems ``i..`` can add to a passage (their stored maximum scores).

        1. The short lists ``..i`` are merged into candidates in one pass while their postings
           stay under ``1/sparse_share`` of the passages.
        2. The :attr:`seed_size` best candidates by partial score are scored in full: their
           ``k``-th score is a floor under the final one, and prunes the others.
        3. The candidates' scores are completed with the long lists by binary search, the
           shortest first; before each, the candidates that cannot reach the ``k``-th best score
           so far (``theta``) even with every list left are dropped.
        4. Every other passage is only in the long lists, so scores at most ``left[i]``. When
           that is under ``theta`` (now a full score), the top ``k`` is found. Otherwise only
           the lists ``i..e`` with ``left[e] >= theta`` can lift a new passage past it, and only
           through a posting whose score is at least ``theta - left[e]`` less the other such
           lists' bounds: those few passages are scored in full. When they are too many, the
           lists are merged in one dense pass instead.
        """
        assert self.max_scores is not None
        ids = np.asarray(terms, dtype=np.int64)
        lengths = self.indptr[ids + 1] - self.indptr[ids]
        order = np.argsort(lengths, kind="stable")
        ids, lengths = ids[order], lengths[order]
        bounds = np.asarray(self.max_scores)[ids].astype(np.float64)
        left = np.append(np.cumsum(bounds[::-1])[::-1], 0.0) * (1 + 1e-5) + 1e-9  # a margin for rounding
        # 1. The short lists, merged in one pass while their postings stay a small share.
        i = int(np.searchsorted(self.sparse_share * np.cumsum(lengths), self.num_docs, side="right"))
        candidates, scores = self._merge_sparse(ids[:i])
        floor = 0.0  # a lower bound of the final k-th score: the k-th full score of some passages

        def theta() -> float:
            if len(scores) < k:
                return floor
            return max(floor, float(np.partition(scores, len(scores) - k)[len(scores) - k]))

        # 2. The best few candidates by partial score, scored in full, give a tight floor first.
        if i < len(ids) and len(candidates) > self.seed_size:
            seed = np.sort(np.argpartition(scores, len(scores) - self.seed_size)[len(scores) - self.seed_size :])
            seed_docs, seed_scores = candidates[seed], scores[seed]
            for term in ids[i:]:
                self._complete(seed_docs, seed_scores, int(term))
            floor = float(np.partition(seed_scores, len(seed_scores) - k)[len(seed_scores) - k])
            candidates, scores = _kept(candidates, scores, scores + left[i] >= floor)
        for j in range(i, len(ids)):
            if len(scores) > k:
                candidates, scores = _kept(candidates, scores, scores + left[j] >= theta())
            self._complete(candidates, scores, int(ids[j]))
        bound = theta()
        if i == len(ids) or left[i] < bound:
            return candidates, scores
        e = i
        while e < len(ids) and left[e] >= bound:
            e += 1
        found = self._lifted(ids[i:e], bounds[i:e], bound - left[e]) if bound > 0 else None
        start = i
        if found is None:  # a dense pass over the lists that can lift a passage
            found, found_scores = self._merge_dense(ids[i:e], at_least=bound - left[e])
            start = e
        else:
            found_scores = np.zeros(len(found), dtype=np.float64)
        # The passages of lists 0..i are candidates, or were dropped as out of reach; the others
        # have lists i..start in found_scores, and are completed like the candidates, pruned
        # against the bound before each list. (Masks keep them sorted, as _complete needs.)
        found, found_scores = _kept(found, found_scores, ~np.isin(found, candidates, assume_unique=True))
        for j in range(start, len(ids)):
            found, found_scores = _kept(found, found_scores, found_scores + left[j] >= bound)
            self._complete(found, found_scores, int(ids[j]))
        return np.concatenate([candidates, found]), np.concatenate([scores, found_scores])

    def _lifted(self, ids: Any, bounds: Any, need: float) -> npt.NDArray[Any] | None:
        """The passages of lists ``ids`` whose scores there may add up to ``need``, sorted.

        A passage can only reach ``need`` if each of its postings reaches ``need`` less the other
        lists' bounds. ``None`` when they are more than a sparse merge is worth (the caller
        merges the lists densely then).
        """
        slack = float(np.sum(bounds))
        parts = []
        for term, term_bound in zip(ids.tolist(), bounds.tolist(), strict=True):
            docs, weights = self._postings(term)
            floor = need - (slack - term_bound) * (1 + 1e-5) - 1e-9  # a margin for rounding
            parts.append(np.asarray(docs)[np.asarray(weights) >= floor])
            if self.sparse_share * len(parts[-1]) > self.num_docs:
                return None
        merged = np.sort(np.concatenate(parts))
        found = merged[np.append(True, merged[1:] != merged[:-1])] if len(merged) else merged
        return None if self.sparse_share * len(found) > self.num_docs else found

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
