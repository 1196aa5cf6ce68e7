from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchain_graph.ir.bm25.retriever import BM25Retriever
from searchain_graph.ir.corpus import CorpusFormatError, load_corpus, passage_text

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_formats(tmp_path: Path) -> None:
    corpus = _write(
        tmp_path / "c.jsonl",
        [
            json.dumps({"id": "a", "title": "Kevin Drew", "text": "Kevin Drew was born in Toronto."}),
            "",
            json.dumps({"id": "b", "contents": '"Toronto Coach Terminal"\nBuses left from the terminal.'}),
            json.dumps({"title": "Shirley Temple", "paragraph_text": "She served as Chief of Protocol."}),
            json.dumps({"title": "StrategyQA", "contents": "Frost forms in winter.", "para_index": 0}),
        ],
    )
    docs = load_corpus(corpus)
    assert [(d.metadata["id"], d.metadata["title"]) for d in docs] == [
        ("a", "Kevin Drew"),
        ("b", "Toronto Coach Terminal"),
        ("4", "Shirley Temple"),
        ("5", "StrategyQA"),
    ]
    assert docs[1].page_content == "Buses left from the terminal."
    assert passage_text(docs[0]) == "Kevin Drew\nKevin Drew was born in Toronto."


def test_dpr_tsv(tmp_path: Path) -> None:
    corpus = _write(tmp_path / "psgs.tsv", ["id\ttext\ttitle", '1\t"Aaron is a prophet."\tAaron', "2\tText two\tTwo"])
    docs = load_corpus(corpus)
    assert [(d.metadata["id"], d.page_content, d.metadata["title"]) for d in docs] == [
        ("1", "Aaron is a prophet.", "Aaron"),
        ("2", "Text two", "Two"),
    ]


@pytest.mark.parametrize(
    ("name", "lines", "message"),
    [
        ("bad.jsonl", ['{"id": 1, "text": "ok"}', '{"id": 2, "text": "broken'], r"bad.jsonl:2: not valid JSON"),
        ("notext.jsonl", ['{"id": 1, "text": "ok"}', '{"id": 2, "title": "T"}'], r"notext.jsonl:2: no passage text"),
        ("list.jsonl", ['["a", "b"]'], r"list.jsonl:1: expected a JSON object"),
        ("short.tsv", ["id\ttext\ttitle", "1\tonly two"], r"short.tsv:2: expected 3 tab-separated fields"),
        ("header.tsv", ["1\ttext\ttitle"], r"header.tsv:1: expected a DPR header"),
        ("empty.jsonl", [""], r"no passages"),
    ],
)
def test_broken_lines_are_refused_with_their_line_number(
    tmp_path: Path, name: str, lines: list[str], message: str
) -> None:
    with pytest.raises(CorpusFormatError, match=message):
        load_corpus(_write(tmp_path / name, lines))


def test_missing_corpus_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="corpus file not found"):
        load_corpus(tmp_path / "nope.jsonl")


def test_bm25_top1_on_the_shipped_corpora() -> None:
    retriever = BM25Retriever.from_files(
        [ROOT / "examples/data/searchain_demo.jsonl", ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl"]
    )
    assert len(retriever) == 2007
    top = retriever.invoke("Where was Kevin Drew born?")
    assert len(top) == 1
    assert top[0].metadata["title"] == "Kevin Drew"
    assert top[0].metadata["score"] > 0
    top = retriever.invoke("Who portrayed Corliss Archer in the film Kiss and Tell?")
    assert top[0].metadata["title"] in {"Kiss and Tell (1945 film)", "Meet Corliss Archer", "Corliss Archer"}


def test_bm25_no_shared_term_returns_nothing() -> None:
    retriever = BM25Retriever.from_files(ROOT / "examples/data/searchain_demo.jsonl", k=3)
    assert retriever.invoke("zzzz qqqq") == []
    assert retriever.invoke("") == []
    assert len(retriever.invoke("Toronto bus terminal")) == 3
    assert retriever.batch(["Kevin Drew", "Greyhound"])[1][0].metadata["title"] in {
        "Greyhound Lines",
        "Toronto Coach Terminal",
    }


def test_bm25_refuses_an_empty_corpus() -> None:
    with pytest.raises(ValueError, match="empty corpus"):
        BM25Retriever.from_documents([])
    with pytest.raises(RuntimeError, match="no index"):
        BM25Retriever().invoke("x")
