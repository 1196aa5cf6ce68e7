"""The demo corpus: found in a source checkout, in the wheel's copy, or refused with the way out."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchain_graph import BM25Retriever, demo_corpus
from searchain_graph.ir import demo

ROOT = Path(__file__).resolve().parents[2]


def test_a_checkout_reads_examples_data() -> None:
    files = demo_corpus()
    assert files == [ROOT / "examples" / "data" / name for name in demo.DEMO_FILES]
    retriever = BM25Retriever.from_files(files, k=1)
    assert len(retriever) == 8 + 1999
    assert "Kevin Drew" in retriever.invoke("Who is the performer of Spirit If...?")[0].page_content


def test_the_wheels_copy_comes_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in demo.DEMO_FILES:
        (tmp_path / name).write_text('{"title": "T", "text": "x"}\n')
    monkeypatch.setattr(demo, "_SHIPPED", tmp_path)
    assert demo_corpus() == [tmp_path / name for name in demo.DEMO_FILES]


def test_a_missing_corpus_names_both_places_and_the_way_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo, "_SHIPPED", tmp_path / "a")
    monkeypatch.setattr(demo, "_CHECKOUT", tmp_path / "b")
    with pytest.raises(
        FileNotFoundError, match=r"is in neither .*a nor .*b: reinstall searchain-graph, or pass your own"
    ):
        demo_corpus()
