"""Building a BM25 index directory from passage texts in bounded memory: count, spill sorted shards, merge.

An index over Wikipedia's 21M passages has about a billion (passage, stem) rows. Sorting them
in memory, as a simple build would, takes about 0.7 GB per million passages; this build keeps
at most ``shard_rows`` rows in memory at once, whatever the corpus size:

1. **count**: chunks of passages are tokenised (:mod:`~searchain_graph.ir.bm25.tokenising`) and
   counted in NumPy, in worker processes when the corpus is large (:func:`count_chunks`; each
   process remembers the stems of the words it has seen), and each chunk's stems get global ids
   in order of first sight;
2. **spill**: every ``shard_rows`` rows, the rows so far are sorted by stem (passages stay in
   order within a stem: a stable sort) and written to three raw files, with the shard's own
   per-stem offsets;
3. **merge**: once the corpus is read, the document frequencies, IDF and length norms are
   known. The final arrays are written front to back, one block of stems at a time: each
   block takes its rows from every shard (a contiguous range in each, since shards are
   sorted by stem), sorts them by stem (stable: shard order is passage order), computes the
   scores and appends them to ``bm25_data.npy`` and ``bm25_indices.npy``.

Memory is the vocabulary, one ``int32`` and one ``float32`` per passage (lengths and norms),
and two shards of rows (one filling while a thread sorts and writes the other; about 40 bytes
a row while sorting) or one block. Shards are read with plain
file reads, not memory maps, so that the pages read do not count against the build's resident
memory. The result is the same index, array for array, as the in-memory sort gave.

The files of an index, which :meth:`~searchain_graph.ir.bm25.index.BM25Index.load` reads (and
:meth:`~searchain_graph.ir.bm25.index.BM25Index.save` writes too), are named here:
:data:`PARAMS_FILE` (the format version, ``k1``, ``b`` and the vocabulary), ``bm25_NAME.npy`` for
each ``NAME`` of :data:`ARRAYS`, and ``bm25_max_scores.npy`` (:data:`MAX_SCORES`).
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from searchain_graph.ir.bm25.tokenising import SnowballStemmer, split_words
from searchain_graph.ir.index_dir import load_array

__all__ = [
    "ARRAYS",
    "FORMAT_VERSION",
    "MAX_SCORES",
    "PARAMS_FILE",
    "SHARD_ROWS",
    "Counted",
    "build_bm25",
    "count_chunks",
    "stable_argsort_u32",
]

FORMAT_VERSION = 1
PARAMS_FILE = "bm25.json"
ARRAYS = ("data", "indices", "indptr", "doc_lengths")
MAX_SCORES = "max_scores"
"""An optional array: each stem's highest score, the bound query-time pruning uses."""

SHARD_ROWS = 16_000_000
"""Rows (passage, stem pairs) held in memory before a shard is spilled: about 0.6 GB while sorting."""
_WORK = "bm25_shards.tmp"


# --- counting: passages to (passage, stem, count) rows, chunk by chunk -------------------------


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


class _WordStems:
    """Each word's stem number, remembered across the chunks one process counts.

    A chunk's words are mostly words the process has seen: one dict lookup per word in C
    replaces numbering the chunk's words and stemming them again. Only unseen words are
    stemmed. The memory is bounded: past :attr:`limit` words it starts afresh (at a chunk's
    start, so the numbers within a chunk are consistent).
    """

    limit = 1 << 20
    """Words remembered at most (about 100 MB)."""

    def __init__(self) -> None:
        self._stemmer = SnowballStemmer()
        self._reset()

    def _reset(self) -> None:
        self.numbers: dict[bytes, int] = {}  # word -> stem number, -1 for a stopword
        self.stems: list[str] = []
        self._stem_numbers: dict[str, int] = {}

    def lookup(self, words: list[bytes]) -> npt.NDArray[np.int64]:
        """The stem number of each word (-1: a stopword), stemming the words not seen before."""
        if len(self.numbers) > self.limit:
            self._reset()
        numbers = np.fromiter(map(self.numbers.get, words, itertools.repeat(-2)), dtype=np.int64, count=len(words))
        unseen = np.flatnonzero(numbers == -2).tolist()
        if unseen:
            new = list(dict.fromkeys(words[i] for i in unseen))
            for word, stem in zip(new, self._stemmer.stems(new), strict=True):
                if stem is None:
                    self.numbers[word] = -1
                    continue
                number = self._stem_numbers.setdefault(stem, len(self.stems))
                if number == len(self.stems):
                    self.stems.append(stem)
                self.numbers[word] = number
            numbers[unseen] = [self.numbers[words[i]] for i in unseen]
        return numbers


_WORD_STEMS: _WordStems | None = None


def _count_chunk(texts: list[str]) -> tuple[list[str], npt.NDArray[np.int32], npt.NDArray[np.int32], Any, Any]:
    """Tokenise and count one chunk of passages.

    Returns:
        ``(stems, doc, term, tf, lengths)``: the chunk's distinct stems (in order of first
        occurrence), and one row per (passage, stem) pair: the passage's position in the
        chunk, the stem's position in ``stems``, and its count; plus each passage's length
        in stems.
    """
    global _WORD_STEMS
    if _WORD_STEMS is None:
        _WORD_STEMS = _WordStems()
    per_text = [split_words(text) for text in texts]
    lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(per_text))
    flat = list(itertools.chain.from_iterable(per_text))
    del per_text
    stem_of_token = _WORD_STEMS.lookup(flat)
    del flat
    doc_of_token = np.repeat(np.arange(len(texts), dtype=np.int64), lengths)
    keep = stem_of_token >= 0
    doc_of_token, stem_of_token = doc_of_token[keep], stem_of_token[keep]
    lengths = np.bincount(doc_of_token, minlength=len(texts)).astype(np.int32)
    # Renumber the chunk's stems in order of first occurrence, as if counted afresh.
    first = np.full(len(_WORD_STEMS.stems), len(stem_of_token), dtype=np.int64)
    np.minimum.at(first, stem_of_token, np.arange(len(stem_of_token)))
    found = np.flatnonzero(first < len(stem_of_token))
    found = found[np.argsort(first[found], kind="stable")]
    rank = np.zeros(len(first), dtype=np.int64)
    rank[found] = np.arange(len(found))
    term_of_token = rank[stem_of_token]
    stems = [_WORD_STEMS.stems[n] for n in found.tolist()]
    n_stems = max(len(stems), 1)
    pairs, tf = np.unique(doc_of_token * n_stems + term_of_token, return_counts=True)
    doc = (pairs // n_stems).astype(np.int32)
    term = (pairs % n_stems).astype(np.int32)
    return stems, doc, term, tf.astype(np.int32), lengths


def _chunks(texts: Iterable[str], size: int) -> Iterator[list[str]]:
    iterator = iter(texts)
    while chunk := list(itertools.islice(iterator, size)):
        yield chunk


Counted = tuple[list[str], npt.NDArray[np.int32], npt.NDArray[np.int32], Any, Any]
"""What :func:`_count_chunk` returns for a chunk: ``(stems, doc, term, tf, lengths)``."""


def count_chunks(
    texts: Iterable[str], *, workers: int | None = None, chunk_size: int = 8192
) -> Iterator[tuple[int, Counted]]:
    """Tokenise and count ``texts`` chunk by chunk, in order: ``(first passage, counts)`` per chunk.

    Args:
        texts: Passage texts, streamed once.
        workers: Tokenising processes. ``None``: one per CPU core (at most 8) once the corpus
            exceeds one chunk; ``1``: tokenise in this process.
        chunk_size: Passages per unit of work.
    """
    if workers is None:
        workers = min(os.cpu_count() or 1, 8)
    chunks = _chunks(texts, chunk_size)
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    offset = 0
    if second is None or workers <= 1:
        for chunk in itertools.chain([first], [second] if second else [], chunks):
            yield offset, _count_chunk(chunk)
            offset += len(chunk)
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_exit_with_parent, initargs=(os.getpid(),)
    ) as pool:
        pending: list[tuple[int, Future[Counted]]] = []
        for chunk in itertools.chain([first, second], chunks):
            pending.append((offset, pool.submit(_count_chunk, chunk)))
            offset += len(chunk)
            while len(pending) > 2 * workers:
                start, future = pending.pop(0)
                yield start, future.result()
        for start, future in pending:
            yield start, future.result()


# --- spilling sorted shards and merging them ---------------------------------------------------


def stable_argsort_u32(values: npt.NDArray[np.int32]) -> npt.NDArray[np.intp]:
    """Stable argsort of non-negative 32-bit ints as LSD radix passes over 16-bit digits.

    NumPy's stable sort is a radix sort for 16-bit types (O(n)), and a merge sort otherwise;
    this is about 4x faster than ``np.lexsort`` on the millions of rows of an index.
    """
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    if values.size and int(values.max()) > 0xFFFF:
        high = (values[order] >> 16).astype(np.uint16)
        order = order[np.argsort(high, kind="stable")]
    return order


def _write_npy_header(handle: BinaryIO, dtype: str, length: int) -> None:
    np.lib.format.write_array_header_1_0(handle, {"descr": dtype, "fortran_order": False, "shape": (length,)})


def _read(path: Path, dtype: type[np.generic], start: int, stop: int) -> npt.NDArray[Any]:
    itemsize = np.dtype(dtype).itemsize
    with path.open("rb") as handle:
        handle.seek(start * itemsize)
        return np.fromfile(handle, dtype=dtype, count=stop - start)


class _Shards:
    """The spilled shards of a build: rows sorted by stem, and each shard's per-stem offsets."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.offsets: list[Path] = []
        self.df = np.zeros(0, dtype=np.int64)
        self.rows = 0

    def spill(self, docs: list[Any], terms: list[Any], tfs: list[Any], vocab_size: int) -> None:
        term = np.concatenate(terms)
        order = stable_argsort_u32(term)
        n = len(self.offsets)
        term = term[order]
        for name, values in (("doc", np.concatenate(docs)[order]), ("tf", np.concatenate(tfs)[order])):
            values.astype(np.int32, copy=False).tofile(self.directory / f"{n}.{name}")
        del order
        counts = np.bincount(term, minlength=vocab_size)
        offsets = np.zeros(vocab_size + 1, dtype=np.int64)
        np.cumsum(counts, out=offsets[1:])
        np.save(self.directory / f"{n}.offsets.npy", offsets)
        if len(self.df) < vocab_size:
            self.df = np.concatenate([self.df, np.zeros(vocab_size - len(self.df), dtype=np.int64)])
        self.df += counts
        self.rows += len(term)
        self.offsets.append(self.directory / f"{n}.offsets.npy")

    def block(self, first: int, stop: int) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[Any]]:
        """The rows of stems ``first..stop-1`` from every shard: ``(stem, passage, tf)``, stem-major."""
        terms, docs, tfs = [], [], []
        for n, path in enumerate(self.offsets):
            offsets = load_array(path, mmap=True)
            size = len(offsets) - 1  # stems this shard knew of
            lo, hi = int(offsets[min(first, size)]), int(offsets[min(stop, size)])
            if hi > lo:
                counts = np.diff(np.asarray(offsets[min(first, size) : min(stop, size) + 1]))
                terms.append(np.repeat(np.arange(min(first, size), min(stop, size), dtype=np.int32), counts))
                docs.append(_read(self.directory / f"{n}.doc", np.int32, lo, hi))
                tfs.append(_read(self.directory / f"{n}.tf", np.int32, lo, hi))
            del offsets
        if not terms:
            return np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0, np.int32)
        term = np.concatenate(terms)
        order = stable_argsort_u32(term - np.int32(first))
        return term[order], np.concatenate(docs)[order], np.concatenate(tfs)[order]


def build_bm25(
    texts: Iterable[str],
    directory: str | Path,
    *,
    k1: float = 1.5,
    b: float = 0.75,
    workers: int | None = None,
    chunk_size: int = 8192,
    shard_rows: int = SHARD_ROWS,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Build a BM25 index over ``texts`` into ``directory`` in bounded memory; returns the passage count.

    Writes the files :meth:`~searchain_graph.ir.bm25.index.BM25Index.load` reads. Scratch shards go
    to ``directory/bm25_shards.tmp`` and are deleted at the end (and on an error).

    Args:
        texts: The passages' texts, streamed once.
        directory: Where the index files go (created if needed).
        k1: BM25's term-frequency saturation.
        b: BM25's length normalisation.
        workers: Tokenising processes (``None``: one per core, at most 8, once the corpus exceeds
            one chunk; ``1``: in this process).
        chunk_size: Passages per unit of work.
        shard_rows: Rows held in memory before a shard is spilled to disk.
        progress: Called with the number of passages of each finished chunk.

    Raises:
        ValueError: ``texts`` is empty, or ``k1`` or ``b`` is out of range.
    """
    if not (k1 >= 0 and 0 <= b <= 1):
        raise ValueError(f"BM25 needs k1 >= 0 and 0 <= b <= 1, got k1={k1}, b={b}")
    directory = Path(directory)
    shards = _Shards(directory / _WORK)
    try:
        vocab: dict[str, int] = {}
        lengths: list[npt.NDArray[np.int32]] = []
        docs: list[Any] = []
        terms: list[Any] = []
        tfs: list[Any] = []
        held = 0
        # Shards are sorted and written by one thread beside the reading (NumPy's sorts and
        # writes release the GIL): one shard is spilling while the next fills.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="bm25-spill") as spiller:
            spilling: Future[None] | None = None
            for start, (stems, doc, term, tf, chunk_lengths) in count_chunks(
                texts, workers=workers, chunk_size=chunk_size
            ):
                lut = np.fromiter((vocab.setdefault(s, len(vocab)) for s in stems), dtype=np.int32, count=len(stems))
                docs.append(doc + np.int32(start))
                terms.append(lut[term] if len(stems) else term)
                tfs.append(tf)
                lengths.append(chunk_lengths)
                held += len(doc)
                if held >= shard_rows:
                    if spilling is not None:
                        spilling.result()
                    spilling = spiller.submit(shards.spill, docs, terms, tfs, len(vocab))
                    docs, terms, tfs, held = [], [], [], 0
                if progress is not None:
                    progress(len(chunk_lengths))
            if spilling is not None:
                spilling.result()
        if not lengths:
            raise ValueError("cannot build a BM25 index over an empty corpus")
        if held:
            shards.spill(docs, terms, tfs, len(vocab))
        del docs, terms, tfs
        doc_lengths = np.concatenate(lengths).astype(np.int32)
        del lengths
        _merge(shards, directory, doc_lengths, len(vocab), k1=k1, b=b, block_rows=max(1, shard_rows))
        np.save(directory / "bm25_doc_lengths.npy", doc_lengths)
        params = {"format_version": FORMAT_VERSION, "k1": k1, "b": b, "vocab": vocab}
        (directory / PARAMS_FILE).write_text(json.dumps(params, ensure_ascii=False), encoding="utf-8")
        return int(doc_lengths.shape[0])
    finally:
        shutil.rmtree(shards.directory, ignore_errors=True)


def _merge(
    shards: _Shards,
    directory: Path,
    doc_lengths: npt.NDArray[np.int32],
    vocab_size: int,
    *,
    k1: float,
    b: float,
    block_rows: int,
) -> None:
    """Write ``bm25_indptr``, ``bm25_indices`` and ``bm25_data`` from the shards, one block of stems at a time."""
    num_docs = len(doc_lengths)
    df = np.zeros(vocab_size, dtype=np.int64)
    df[: len(shards.df)] = shards.df
    indptr = np.zeros(vocab_size + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    np.save(directory / "bm25_indptr.npy", indptr)
    avgdl = float(doc_lengths.mean()) or 1.0
    idf = np.log1p((num_docs - df + 0.5) / (df + 0.5)).astype(np.float32)
    norm = (k1 * (1.0 - b + b * doc_lengths.astype(np.float32) / avgdl)).astype(np.float32)
    total = int(indptr[-1])
    # Block boundaries: stems whose rows add up to about block_rows (one huge stem is a block alone).
    bounds = np.searchsorted(indptr, np.arange(0, total, block_rows), side="right") - 1
    bounds = np.union1d([0], bounds[(bounds >= 0) & (bounds < vocab_size)])
    bounds = np.append(bounds, vocab_size)
    bounds_per_stem = np.zeros(vocab_size, dtype=np.float32)
    with (
        (directory / "bm25_data.npy").open("wb") as data_file,
        (directory / "bm25_indices.npy").open("wb") as indices_file,
    ):
        _write_npy_header(data_file, "<f4", total)
        _write_npy_header(indices_file, "<i4", total)
        for first, stop in zip(bounds[:-1], bounds[1:], strict=True):
            term, doc, tf_int = shards.block(int(first), int(stop))
            tf = tf_int.astype(np.float32)
            data = (idf[term] * tf / (tf + norm[doc])).astype(np.float32)
            data.tofile(data_file)
            doc.astype(np.int32, copy=False).tofile(indices_file)
            if len(data):  # every stem has at least one row, so each block's stems start where indptr says
                starts = indptr[int(first) : int(stop)] - indptr[int(first)]
                bounds_per_stem[int(first) : int(stop)] = np.maximum.reduceat(data, starts)
    np.save(directory / f"bm25_{MAX_SCORES}.npy", bounds_per_stem)
