"""The tantivy index backend: ``searchain index --retriever tantivy`` and ``TantivyRetriever``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("tantivy")

from searchain_graph.cli import main
from searchain_graph.ir.corpus import CorpusFormatError, PassageStore
from searchain_graph.ir.index import build_index, load_index
from searchain_graph.ir.tantivy_index import TantivyRetriever, words_query

ROOT = Path(__file__).resolve().parents[2]
PARAGRAPHS = ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl"
QUESTIONS = [
    json.loads(line)["question_text"]
    for line in (ROOT / "examples/data/hotpotqa_dev20_questions.jsonl").read_text(encoding="utf-8").splitlines()
]


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("tantivy")
    build_index(PARAGRAPHS, root / "tv", retriever="tantivy", workers=2)
    build_index(PARAGRAPHS, root / "bm25", k1=1.2)  # tantivy's k1
    return root / "tv", root / "bm25"


def test_hits_are_stored_passages_with_score_and_pid(indexes: tuple[Path, Path]) -> None:
    retriever = load_index(indexes[0], k=3)
    assert isinstance(retriever, TantivyRetriever) and len(retriever) == 1999
    store = PassageStore(indexes[0])
    hits = retriever.invoke("Where was Kevin Drew born?")
    assert len(hits) == 3
    scores = [h.metadata["score"] for h in hits]
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    for hit in hits:
        row = store[hit.metadata["pid"]]
        assert hit.page_content == row.page_content and hit.metadata["title"] == row.metadata["title"]
        assert hit.metadata["id"] == row.metadata["id"]
    assert retriever.invoke("Where was Kevin Drew born?", k=1) == hits[:1]  # k per call
    manifest = json.loads((indexes[0] / "searchain_index.json").read_text())
    assert manifest["retriever"] == "tantivy" and manifest["bm25"] == {"k1": 1.2, "b": 0.75}


def test_top_1_mostly_agrees_with_the_built_in_bm25_at_the_same_k1(indexes: tuple[Path, Path]) -> None:
    # Not the same engine: tantivy keeps stopwords and stems with its own Snowball. Measured: 17 of 20.
    tantivy, bm25 = load_index(indexes[0], k=1), load_index(indexes[1], k=1)
    same = sum(tantivy.invoke(q)[0].metadata["pid"] == bm25.invoke(q)[0].metadata["pid"] for q in QUESTIONS)
    assert same >= 15, same


@pytest.mark.parametrize(
    "query",
    ['title: AND (Kevin Drew) -born "Toronto"', "NOT OR AND", "Kevin~2 Dr?w* [1 TO 5] {x} ^3 \\", "né à Montréal"],
)
def test_query_syntax_is_only_words(indexes: tuple[Path, Path], query: str) -> None:
    retriever = load_index(indexes[0], k=2)
    hits = retriever.invoke(query)
    assert len(hits) <= 2
    assert "and" in words_query("AND title:") and ":" not in words_query("title:x")


async def test_no_words_no_hits_and_async_equals_sync(indexes: tuple[Path, Path]) -> None:
    retriever = load_index(indexes[0], k=2)
    assert retriever.invoke("?! ...") == [] and retriever.invoke("") == []
    question = QUESTIONS[0]
    assert await retriever.ainvoke(question) == retriever.invoke(question)
    assert len(await retriever.ainvoke(question, k=4)) == 4


def test_cli_builds_it_and_refuses_parameters_tantivy_cannot_take(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "idx"
    assert main(["index", str(PARAGRAPHS), "--out", str(out), "--retriever", "tantivy", "--quiet"]) == 0
    assert "tantivy index at" in capsys.readouterr().out
    assert load_index(out).invoke(QUESTIONS[1])
    code = main(["index", str(PARAGRAPHS), "--out", str(out), "--retriever", "tantivy", "--bm25-k1", "0.9"])
    assert code == 2 and "fixed at k1=1.2" in capsys.readouterr().err


def test_a_broken_corpus_leaves_the_previous_index(tmp_path: Path) -> None:
    out = tmp_path / "idx"
    build_index(PARAGRAPHS, out, retriever="tantivy")
    broken = tmp_path / "broken.jsonl"
    broken.write_text(PARAGRAPHS.read_text(encoding="utf-8").splitlines()[0] + "\n{not json\n", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="broken.jsonl"):
        build_index(broken, out, retriever="tantivy")
    assert len(load_index(out)) == 1999 and not (tmp_path / "idx.partial").exists()


def test_without_the_package_the_error_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tantivy", None)
    with pytest.raises(ImportError, match=r"searchain-graph\[tantivy\]"):
        build_index(PARAGRAPHS, tmp_path / "idx", retriever="tantivy")
    assert not (tmp_path / "idx").exists() and not (tmp_path / "idx.partial").exists()
