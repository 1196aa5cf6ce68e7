"""``ReaderReranked``: a retriever's top passages, the one the reader is surest of first."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from searchain_graph import create_searchain_graph
from searchain_graph.ir.bm25.retriever import BM25Retriever
from searchain_graph.ir.readers.base import Passage, ReaderOutput
from searchain_graph.ir.reranked import ReaderReranked
from tests.fakes import PASSAGES, QUESTION, TREE_READS, ScriptedReader, retriever, tree_llm


class TitleReader:
    """Surer the earlier a passage's title comes in ``order``; records what it read."""

    reads_passages = True

    def __init__(self, order: Sequence[str], none: Sequence[str] = ()) -> None:
        self.order, self.none = list(order), set(none)
        self.read_titles: list[str] = []

    def read_batch(self, pairs: Sequence[tuple[str, Passage]]) -> list[ReaderOutput]:
        out = []
        for _, passage in pairs:
            self.read_titles.append(passage.title)
            if passage.title in self.none:
                out.append(ReaderOutput("", None))
            else:
                rank = self.order.index(passage.title) if passage.title in self.order else len(self.order)
                out.append(ReaderOutput(passage.title, 10.0 - rank))
        return out


def bm25(k: int = 1) -> BM25Retriever:
    return BM25Retriever.from_documents(PASSAGES, k=k)


class Fixed(BaseRetriever):
    """A retriever without ``k``: it returns its documents, in order, whatever the query."""

    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.docs)


def titles(docs: Sequence[Document]) -> list[str]:
    return [str(d.metadata["title"]) for d in docs]


def test_the_passage_the_reader_is_surest_of_comes_first() -> None:
    base = titles(PASSAGES)  # the retriever's order
    reader = TitleReader(order=["Montreal", base[2]])
    reranked = ReaderReranked(retriever=Fixed(docs=PASSAGES), reader=reader, depth=4)
    docs = reranked.invoke("Kevin Drew Toronto")
    assert titles(docs) == ["Montreal"]  # k=1 by default: the reader's surest of the top 4
    assert reader.read_titles == base  # one batch of the retriever's top 4
    assert docs[0].metadata["retriever_rank"] == 4
    assert docs[0].metadata["rerank_confidence"] == pytest.approx(10.0)
    every = reranked.invoke("Kevin Drew Toronto", k=4)
    assert titles(every) == ["Montreal", base[2], base[0], base[1]]  # ties in the retriever's order


def test_passages_beyond_the_depth_keep_the_retrievers_order_and_unread_ones_go_last() -> None:
    base = titles(PASSAGES)
    reader = TitleReader(order=[base[1]], none=[base[0]])
    docs = ReaderReranked(retriever=Fixed(docs=PASSAGES), reader=reader, depth=2).invoke("query", k=4)
    assert titles(docs) == [base[1], base[0], base[2], base[3]]
    assert docs[1].metadata["rerank_confidence"] is None
    assert [d.metadata["retriever_rank"] for d in docs] == [2, 1, 3, 4]
    assert len(reader.read_titles) == 2


def test_the_retriever_is_asked_for_the_depth() -> None:
    reader = TitleReader(order=[])
    ReaderReranked(retriever=bm25(k=1), reader=reader, depth=3).invoke("Kevin Drew Toronto Montreal Spirit")
    assert len(reader.read_titles) == 3  # a k=1 retriever asked for 3


def test_async_gives_the_same_passages() -> None:
    reader = TitleReader(order=["Montreal"])
    reranked = ReaderReranked(retriever=bm25(), reader=reader, depth=4)
    sync = titles(reranked.invoke("Kevin Drew Toronto", k=3))
    assert titles(asyncio.run(reranked.ainvoke("Kevin Drew Toronto", k=3))) == sync


def test_a_retriever_without_k_is_reranked_as_it_answers() -> None:
    reranked = ReaderReranked(retriever=Fixed(docs=PASSAGES[:3]), reader=TitleReader(order=["Toronto Coach Terminal"]))
    assert titles(reranked.invoke("anything")) == ["Toronto Coach Terminal"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [({"depth": 1}, "depth must be at least 2"), ({"k": 0}, "k must be at least 1"), ({"reader": object()}, "reader")],
)
def test_bad_settings_are_refused_by_name(fields: dict[str, Any], message: str) -> None:
    settings = {"retriever": bm25(), "reader": TitleReader(order=[])} | fields
    with pytest.raises((ValueError, TypeError), match=message):
        ReaderReranked(**settings)


def test_searchain_runs_on_reranked_passages() -> None:
    """A drop-in retriever: the graph reads the re-ranked top passage; the answer is the same here."""
    reader = ScriptedReader(TREE_READS)
    reranked = ReaderReranked(retriever=retriever(), reader=reader, depth=3)
    out = create_searchain_graph(tree_llm(), reranked, reader, confidence_threshold=1.5).invoke({"question": QUESTION})
    plain = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)
    assert out["answer"] == plain.invoke({"question": QUESTION})["answer"]
    assert all("rerank_confidence" in r["document"]["metadata"] for r in out["references"] if r.get("document"))


def test_the_cli_refuses_a_depth_of_one_and_records_the_choice() -> None:
    from searchain_graph.cli.main import _build_parser

    parser = _build_parser()
    command = ["eval", "--dataset", "hotpotqa", "--data", "x.jsonl", "--methods", "cot", "--rerank"]
    with pytest.raises(SystemExit):
        parser.parse_args([*command, "1"])
    args = parser.parse_args([*command, "5"])
    assert args.rerank == 5


@pytest.mark.parametrize(
    ("options", "depth"),
    [
        ([], 5),  # the tuned preset and the bundled reader
        (["--rerank", "0"], 0),
        (["--rerank", "3"], 3),
        (["--preset", "paper"], 0),  # the paper's top 1
        (["--preset", "paper", "--rerank", "5"], 5),
        (["--reader", "llm"], 0),  # an LLM reading five passages per query: five calls
    ],
)
def test_left_out_the_depth_is_the_presets_and_the_readers(options: list[str], depth: int) -> None:
    from searchain_graph.cli.arguments import rerank_of
    from searchain_graph.cli.main import _build_parser

    parser = _build_parser()
    for command in (["ask", "Q?", "--corpus", "c.jsonl"], ["eval", "--dataset", "hotpotqa", "--data", "x.jsonl"]):
        assert rerank_of(parser.parse_args([*command, *options])) == depth


def test_the_cache_key_names_the_retriever_the_reader_and_the_depth() -> None:
    from searchain_graph.ir.identity import component_key

    keyed = ScriptedReader({})
    keyed.calibration_key = "scripted:v1"  # type: ignore[attr-defined]
    five = ReaderReranked(retriever=bm25(), reader=keyed, depth=5)
    assert five.cache_key and component_key(bm25()).split(":", 1)[1] in five.cache_key
    assert five.cache_key != ReaderReranked(retriever=bm25(), reader=keyed, depth=4).cache_key
    assert ReaderReranked(retriever=bm25(), reader=ScriptedReader({}), depth=5).cache_key == ""  # no stable key
