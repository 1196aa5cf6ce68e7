"""Tokenising and counting passages for BM25: the words, the stems, and one row per (passage, stem).

What the build (:mod:`searchain_graph.ir.bm25_build`) and the queries
(:mod:`searchain_graph.ir.bm25`) share: text is lower-cased, encoded to UTF-8, ASCII punctuation
is mapped to spaces with one ``bytes.translate`` and the result is ``split()``; non-ASCII
punctuation is blanked first with one regex pass over the (rare) non-ASCII texts. Each chunk's
distinct words are stemmed once (Snowball English, stopwords dropped), and counted in NumPy, in
worker processes when the corpus is large (:func:`count_chunks`).
"""

from __future__ import annotations

import functools
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
_NON_ASCII_NON_WORD = re.compile(r"[^\w\s\x00-\x7f]+")
_NON_ASCII_RUN = re.compile(rb"[\x80-\xff]+")


@functools.lru_cache(maxsize=1 << 16)
def _blank_non_ascii(run: bytes) -> bytes:
    """A run of non-ASCII UTF-8 with its non-word characters (punctuation, symbols) blanked."""
    return _NON_ASCII_NON_WORD.sub(" ", run.decode("utf-8")).encode("utf-8")


def _blank_match(match: re.Match[bytes]) -> bytes:
    return _blank_non_ascii(match.group())


def split_words(text: str) -> list[bytes]:
    """Lower-case ``text`` and split it into words (runs of letters and digits), as UTF-8 bytes.

    ASCII punctuation becomes spaces with one ``bytes.translate``; in a text with non-ASCII
    characters, each run of them (a maximal run of bytes >= 0x80 is always whole UTF-8
    characters) has its non-word characters blanked, the runs cached. Unicode whitespace
    other than ASCII's stays inside words, as it always has (queries split the same way).
    """
    data = text.lower().encode("utf-8").translate(_BLANK_ASCII)
    if not text.isascii():
        data = _NON_ASCII_RUN.sub(_blank_match, data)
    return data.split()


class SnowballStemmer:
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
