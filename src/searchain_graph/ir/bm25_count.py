"""Tokenising and counting passages for BM25: the words, the stems, and one row per (passage, stem).

What the build (:mod:`searchain_graph.ir.bm25_build`) and the queries
(:mod:`searchain_graph.ir.bm25`) share: text is lower-cased, encoded to UTF-8, ASCII punctuation
is mapped to spaces with one ``bytes.translate`` and the result is ``split()``; non-ASCII
punctuation is blanked first with one regex pass over the (rare) non-ASCII texts. Each chunk's
distinct words are stemmed once (Snowball English, stopwords dropped), and counted in NumPy, in
worker processes when the corpus is large (:func:`count_chunks`).
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import numpy as np
import numpy.typing as npt

FORMAT_VERSION = 1
PARAMS_FILE = "bm25.json"
ARRAYS = ("data", "indices", "indptr", "doc_lengths")
MAX_SCORES = "max_scores"
"""An optional array: each stem's highest score, the bound query-time pruning uses."""

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
