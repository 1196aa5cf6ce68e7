"""Tokenising for BM25: text to words, and words to stems with English stopwords dropped.

Passages (:mod:`~searchain_graph.ir.bm25.build`) and queries (:mod:`~searchain_graph.ir.bm25.index`)
go through this same code, so that they meet on the same stems. :func:`split_words` lower-cases the
text, encodes it to UTF-8, maps ASCII punctuation to spaces with one ``bytes.translate`` and
``split()``s the result; in the (rare) texts with non-ASCII characters, each run of them has its
punctuation and symbols blanked by a regex, cached per run. :class:`SnowballStemmer` stems the words
(Snowball English) and drops the :data:`STOPWORDS`.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Sequence

__all__ = ["STOPWORDS", "SnowballStemmer", "split_words"]

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
