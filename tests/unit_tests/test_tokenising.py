"""The index build's fast paths give what the plain code gives, byte for byte.

The build of a large BM25 index is CPU-bound on two cores, so its hot loops take shortcuts
(``docs/benchmarks.md`` has the figures). Each is checked here against the plain version it
replaces, on generated input full of the characters that make shortcuts wrong (Unicode
punctuation, combining marks, marks inside words, odd whitespace, a final sigma):

* ``split_words`` blanks only the runs of non-ASCII characters: equal to one regex over the
  whole text;
* the counting workers remember each word's stem across chunks: the counts equal a fresh
  process's, also when the memory starts afresh mid-build;
* ``collapse_whitespace`` skips texts already collapsed: equal to ``" ".join(text.split())``;
* the passage store quotes strings with ``json``'s C function: each line equals ``json.dumps``.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from searchain_graph.ir.bm25 import build, tokenising  # noqa: E402
from searchain_graph.ir.bm25.tokenising import STOPWORDS, split_words  # noqa: E402
from searchain_graph.ir.corpus import collapse_whitespace, iter_corpora, iter_passages  # noqa: E402
from searchain_graph.ir.passage_store import PassageStore, _store_line, store_passages  # noqa: E402

EXAMPLES = int(os.environ.get("SEARCHAIN_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TRICKY = [
    "a", "Z", "7", "_", "-", " ", "  ", "\n", "\t", "\x01", "\x1f", "é", "É", "ß", "İ", "Σ", "ΣΑΣ", "ς", "ﬁ",
    "\u2013", "\u2014", "\u201c", "\u2019", "\u00a0", "\u2009", "\u3000", "\u2028", "\u200e", "\u200b",
    "\u0651", "رّباط", "東京", "½", "²", "°", "€", "🙂", "ｆ", "Ω", "\u0301", "the", "The",
]  # fmt: skip
"""Pieces that make a shortcut wrong if it is: Unicode punctuation and symbols, a combining mark
inside a word (Arabic shadda), a left-to-right mark, Unicode spaces, a final sigma, the chunk
separator byte, stopwords."""

tricky_text = st.lists(st.one_of(st.sampled_from(TRICKY), st.text(max_size=8)), max_size=40).map("".join)

_REFERENCE_BLANK = re.compile(r"[^\w\s\x00-\x7f]+|_")


def reference_words(text: str) -> list[bytes]:
    """The plain tokeniser: one regex over the whole lower-cased text, then the ASCII blanking."""
    text = text.lower()
    if not text.isascii():
        text = _REFERENCE_BLANK.sub(" ", text)
    return text.encode("utf-8").translate(tokenising._BLANK_ASCII).split()


@FUZZ
@given(tricky_text)
def test_split_words_equals_one_regex_over_the_text(text: str) -> None:
    assert split_words(text) == reference_words(text)


def test_split_words_keeps_marks_inside_words_apart() -> None:
    # The shadda (a combining mark, not a word character) splits the word; the left-to-right
    # mark after it is a run of its own elsewhere in the text.
    text = "Rabat (رّباط\u200e) \u200e 1928 \u2013 2014"
    assert split_words(text) == reference_words(text)
    assert "ر".encode() in split_words(text) and b"2014" in split_words(text)


def reference_counts(texts: list[str]) -> tuple[list[str], list[tuple[int, str, int]], list[int]]:
    """A chunk counted the plain way: ``(stems in order of first occurrence, (passage, stem, tf) rows, lengths)``."""
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    order: dict[str, None] = {}
    rows: list[tuple[int, str, int]] = []
    lengths = []
    for n, text in enumerate(texts):
        words = [w.decode("utf-8", "replace") for w in split_words(text)]
        stems = [s for w, s in zip(words, stemmer.stemWords(words), strict=True) if w not in STOPWORDS]
        order.update(dict.fromkeys(stems))
        counts: dict[str, int] = {}
        for stem in stems:
            counts[stem] = counts.get(stem, 0) + 1
        rows += sorted((n, stem, tf) for stem, tf in counts.items())
        lengths.append(len(stems))
    return list(order), rows, lengths


def counted_rows(counted: build.Counted) -> tuple[list[str], list[tuple[int, str, int]], list[int]]:
    stems, doc, term, tf, lengths = counted
    rows = sorted((int(d), stems[int(t)], int(f)) for d, t, f in zip(doc, term, tf, strict=True))
    return stems, rows, [int(x) for x in lengths]


@pytest.fixture
def fresh_word_stems(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts the counting process's word memory afresh."""
    monkeypatch.setattr(build, "_WORD_STEMS", None)


@FUZZ
@given(st.lists(st.lists(tricky_text, min_size=1, max_size=6), min_size=1, max_size=4))
def test_counting_with_a_warm_word_memory_equals_a_fresh_count(chunks: list[list[str]]) -> None:
    build._WORD_STEMS = None  # a new process
    try:
        for texts in chunks:  # every chunk after the first finds words it remembers
            assert counted_rows(build._count_chunk(texts)) == reference_counts(texts)
    finally:
        build._WORD_STEMS = None


@pytest.mark.usefixtures("fresh_word_stems")
def test_the_word_memory_starts_afresh_past_its_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build._WordStems, "limit", 3)
    chunks = [["Kevin Drew is a Canadian musician", "Drew formed the band"], ["a band from Toronto, Canada"]] * 3
    memory_sizes = []
    for texts in chunks:
        assert counted_rows(build._count_chunk(texts)) == reference_counts(texts)
        assert build._WORD_STEMS is not None
        memory_sizes.append(len(build._WORD_STEMS.numbers))
    assert any(later < earlier for earlier, later in zip(memory_sizes, memory_sizes[1:], strict=False))  # emptied


@FUZZ
@given(tricky_text)
def test_collapse_whitespace_equals_split_and_join(text: str) -> None:
    assert collapse_whitespace(text) == " ".join(text.split())


metadata_values = st.one_of(tricky_text, st.integers(), st.none(), st.lists(st.integers(), max_size=2))


@FUZZ
@given(tricky_text, st.dictionaries(st.sampled_from(["title", "id", "url", "text", "é"]), metadata_values, max_size=3))
def test_store_lines_equal_json_dumps(text: str, metadata: dict[str, object]) -> None:
    expected = (json.dumps({**metadata, "text": text}, ensure_ascii=False) + "\n").encode("utf-8")
    assert _store_line(text, metadata) == expected


def test_a_stream_that_fails_leaves_no_readable_store(tmp_path: Path) -> None:
    def passages() -> object:
        yield "first passage", {"title": "A", "id": "1"}
        raise RuntimeError("the corpus broke")

    with pytest.raises(RuntimeError):
        list(store_passages(passages(), tmp_path))  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        PassageStore(tmp_path)  # no offsets file: never a store missing its last passages


def test_passages_stream_as_the_documents_do(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"
    records = [
        {"id": 7, "title": "Kevin Drew", "text": "Kevin  Drew\tis a\u00a0Canadian musician. "},
        {"title": "Toronto", "text": "Toronto is in Canada."},
        {"contents": '"Broken Social Scene"\nA band from Toronto.'},
    ]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    docs = list(iter_corpora(corpus))
    assert [(d.page_content, d.metadata) for d in docs] == list(iter_passages(corpus))
    assert docs[0].page_content == "Kevin Drew is a Canadian musician."
    assert docs[0].metadata == {"title": "Kevin Drew", "id": "7"}
    store = tmp_path / "store"
    assert list(store_passages(iter_passages(corpus), store)) == list(iter_passages(corpus))
    assert list(PassageStore(store)) == docs
    assert np.load(store / "passages.offsets.npy")[-1] == (store / "passages.jsonl").stat().st_size
