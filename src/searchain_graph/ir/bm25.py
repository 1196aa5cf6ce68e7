"""A BM25 engine in NumPy: fast to build, fast to query, saved as memory-mappable arrays.

This is the engine behind :class:`~searchain_graph.ir.bm25_retriever.BM25Retriever`. It is
Lucene's BM25 (``k1 = 1.5``, ``b = 0.75``, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``)
over Snowball-stemmed words with English stopwords removed, the same scoring as
``bm25s``' default, which the first version of this package used. It exists because
building had to reach tens of thousands of passages per second on two cores, and
querying a few milliseconds at 100k passages, which needed:

* **tokenising without a Python object per match**: text is lower-cased, encoded to
  UTF-8, ASCII punctuation is mapped to spaces with one ``bytes.translate`` and the
  result is ``split()``; non-ASCII punctuation is blanked first with one regex pass
  over the (rare) non-ASCII texts. Each chunk's distinct words are stemmed once;
* **counting in NumPy**, per chunk of passages, in worker processes when the corpus is
  large (``workers``), so both cores tokenise;
* **precomputed scores** stored column-wise (one slice of passage ids and scores per
  stem), so a query adds up a few slices with ``np.bincount``.

An index is four ``.npy`` arrays and a JSON file with the vocabulary and parameters;
:meth:`BM25Index.load` memory-maps the arrays, so loading is instant and a large index
is paged in on demand.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from searchain_graph.ir.index_dir import load_array

FORMAT_VERSION = 1
PARAMS_FILE = "bm25.json"
ARRAYS = ("data", "indices", "indptr", "doc_lengths")

STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have
    having he her here hers herself him himself his how i if in into is it its itself just me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own same she should so
    some such than that the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with would you your
    yours yourself yourselves s t""".split()
)
"""English stopwords dropped before stemming (function words only; numbers and names stay)."""

_ASCII_NON_WORD = bytes(c for c in range(128) if not chr(c).isalnum())
_BLANK_ASCII = bytes.maketrans(_ASCII_NON_WORD, b" " * len(_ASCII_NON_WORD))
_NON_ASCII_NON_WORD = re.compile(r"[^\w\s\x00-\x7f]+|_")


def split_words(text: str) -> list[bytes]:
    """Lower-case ``text`` and split it into words (runs of letters and digits), as UTF-8 bytes."""
    text = text.lower()
    if not text.isascii():
        text = _NON_ASCII_NON_WORD.sub(" ", text)
    return text.encode("utf-8").translate(_BLANK_ASCII).split()


_STEMMER_LOCK = threading.Lock()


class _Stemmer:
    """Snowball English stemming with stopwords removed, cached per word.

    PyStemmer's stemmer objects are not thread-safe, so calls are serialised: one index
    can serve concurrent queries (the evaluation harness's threads, a server's requests).
    """

    def __init__(self) -> None:
        import Stemmer

        self._stemmer = Stemmer.Stemmer("english")
        self._lock = threading.Lock()

    def stems(self, words: Sequence[bytes]) -> list[str | None]:
        """The stem of each word, ``None`` for stopwords."""
        decoded = [w.decode("utf-8", "replace") for w in words]
        with self._lock:
            stemmed = self._stemmer.stemWords(decoded)
        return [None if word in STOPWORDS else stem for word, stem in zip(decoded, stemmed, strict=True)]


def _exit_with_parent(parent: int, every: float = 0.2) -> None:
    """Pool worker initializer: exit as soon as the process that started the pool is gone.

    A ``searchain index`` killed with SIGKILL cannot shut its pool down; without this its
    workers would live on, orphaned, blocked on a queue that nobody writes to.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(every)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _count_chunk(texts: list[str]) -> tuple[list[str], npt.NDArray[np.int32], npt.NDArray[np.int32], Any, Any]:
    """Tokenise and count one chunk of passages.

    Returns:
        ``(stems, doc, term, tf, lengths)``: the chunk's distinct stems, and one row per
        (passage, stem) pair: the passage's position in the chunk, the stem's position
        in ``stems``, and its count; plus each passage's length in stems.
    """
    per_text = [split_words(text) for text in texts]
    lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
    flat = list(itertools.chain.from_iterable(per_text))
    del per_text
    # dict.fromkeys and map run in C: about twice as fast as a Python loop assigning ids.
    local: dict[bytes, int] = dict.fromkeys(flat, 0)
    for n, word in enumerate(local):
        local[word] = n
    word_ids = np.fromiter(map(local.__getitem__, flat), dtype=np.int64, count=len(flat))
    words = list(local)
    stems = _Stemmer().stems(words)
    stem_ids: dict[str, int] = {}
    lut = np.full(len(words) + 1, -1, dtype=np.int64)
    for j, stem in enumerate(stems):
        if stem is not None:
            lut[j] = stem_ids.setdefault(stem, len(stem_ids))
    doc_of_token = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    term_of_token = lut[word_ids]
    keep = term_of_token >= 0
    doc_of_token, term_of_token = doc_of_token[keep], term_of_token[keep]
    lengths = np.bincount(doc_of_token, minlength=len(texts)).astype(np.int32)
    n_stems = max(len(stem_ids), 1)
    pairs, tf = np.unique(doc_of_token * n_stems + term_of_token, return_counts=True)
    doc = (pairs // n_stems).astype(np.int32)
    term = (pairs % n_stems).astype(np.int32)
    return list(stem_ids), doc, term, tf.astype(np.int32), lengths


def _stable_argsort_u32(values: npt.NDArray[np.int32]) -> npt.NDArray[np.intp]:
    """Stable argsort of non-negative 32-bit ints as LSD radix passes over 16-bit digits.

    NumPy's stable sort is a radix sort for 16-bit types (O(n)), and a merge sort otherwise;
    this is about 4x faster than ``np.lexsort`` on the millions of rows of an index.
    """
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    if values.size and int(values.max()) > 0xFFFF:
        high = (values[order] >> 16).astype(np.uint16)
        order = order[np.argsort(high, kind="stable")]
    return order


def _chunks(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(texts)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


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
    ) -> None:
        """Wrap built arrays; use :meth:`build` or :meth:`load` rather than calling this."""
        self.vocab = vocab
        self.data = data
        self.indices = indices
        self.indptr = indptr
        self.doc_lengths = doc_lengths
        self.k1 = k1
        self.b = b
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
        """Index ``texts`` (streamed: any iterable, consumed once).

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
        if workers is None:
            workers = min(os.cpu_count() or 1, 8)
        parts: list[tuple[int, tuple[list[str], Any, Any, Any, Any]]] = []
        offset = 0

        def collect(start: int, result: tuple[list[str], Any, Any, Any, Any]) -> None:
            parts.append((start, result))
            if progress is not None:
                progress(len(result[4]))

        chunks = _chunks(texts, chunk_size)
        first = next(chunks, None)
        if first is None:
            raise ValueError("cannot build a BM25 index over an empty corpus")
        second = next(chunks, None)
        if second is None or workers <= 1:
            for chunk in itertools.chain([first], [second] if second else [], chunks):
                collect(offset, _count_chunk(chunk))
                offset += len(chunk)
        else:
            methods = multiprocessing.get_all_start_methods()
            context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
            with ProcessPoolExecutor(
                max_workers=workers, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
            ) as pool:
                pending: list[tuple[int, Future[tuple[list[str], Any, Any, Any, Any]]]] = []
                for chunk in itertools.chain([first, second], chunks):
                    pending.append((offset, pool.submit(_count_chunk, chunk)))
                    offset += len(chunk)
                    while len(pending) > 2 * workers:
                        start, future = pending.pop(0)
                        collect(start, future.result())
                for start, future in pending:
                    collect(start, future.result())
        return cls._from_parts(parts, offset, k1=k1, b=b)

    @classmethod
    def _from_parts(
        cls, parts: list[tuple[int, tuple[list[str], Any, Any, Any, Any]]], num_docs: int, *, k1: float, b: float
    ) -> BM25Index:
        vocab: dict[str, int] = {}
        docs, terms, tfs = [], [], []
        doc_lengths = np.zeros(num_docs, dtype=np.int32)
        for start, (stems, doc, term, tf, lengths) in parts:
            lut = np.fromiter((vocab.setdefault(s, len(vocab)) for s in stems), dtype=np.int32, count=len(stems))
            docs.append(doc + np.int32(start))
            terms.append(lut[term] if len(stems) else term)
            tfs.append(tf)
            doc_lengths[start : start + len(lengths)] = lengths
        doc = np.concatenate(docs)
        term = np.concatenate(terms)
        tf = np.concatenate(tfs).astype(np.float32)
        # Rows arrive in passage order (chunks in order, each sorted by passage), so a stable
        # sort by stem gives stem-major, passage-minor order: two 16-bit radix passes.
        order = _stable_argsort_u32(term)
        doc, term, tf = doc[order], term[order], tf[order]
        df = np.bincount(term, minlength=len(vocab))
        indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(df, out=indptr[1:])
        avgdl = float(doc_lengths.mean()) or 1.0
        idf = np.log1p((num_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
        norm = (k1 * (1.0 - b + b * doc_lengths.astype(np.float32) / avgdl)).astype(np.float32)
        data = (idf[term] * tf / (tf + norm[doc])).astype(np.float32)
        return cls(
            vocab=vocab,
            data=data,
            indices=doc.astype(np.int32),
            indptr=indptr,
            doc_lengths=doc_lengths,
            k1=k1,
            b=b,
        )

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
        slices = [slice(int(self.indptr[t]), int(self.indptr[t + 1])) for t in terms]
        docs = np.concatenate([self.indices[s] for s in slices])
        weights = np.concatenate([self.data[s] for s in slices])
        if self.num_docs <= 4 * len(docs) or self.num_docs <= 2_000_000:
            scores = np.bincount(docs, weights=weights, minlength=self.num_docs)
            candidates = np.flatnonzero(scores)
            cand_scores = scores[candidates]
        else:
            candidates, inverse = np.unique(docs, return_inverse=True)
            cand_scores = np.bincount(inverse, weights=weights)
        if len(candidates) > k:
            kth = np.partition(cand_scores, len(cand_scores) - k)[len(cand_scores) - k]
            keep = cand_scores >= kth
            candidates, cand_scores = candidates[keep], cand_scores[keep]
        order = np.lexsort((candidates, -cand_scores))[:k]
        return candidates[order].astype(np.int64), cand_scores[order].astype(np.float32)

    def save(self, directory: str | Path) -> None:
        """Write the index to ``directory`` (created if needed)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        for name in ARRAYS:
            np.save(directory / f"bm25_{name}.npy", getattr(self, name))
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
        return cls(vocab=params["vocab"], k1=float(params["k1"]), b=float(params["b"]), **arrays)
