"""BM25 engine, corpus formats, passage store, on-disk indexes and the `searchain index` CLI."""

from __future__ import annotations

import functools
import json
import math
import random
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langchain_tests.integration_tests import RetrieversIntegrationTests

from searchain_graph.cli import main
from searchain_graph.ir.bm25.index import BM25Index
from searchain_graph.ir.bm25.retriever import BM25Retriever
from searchain_graph.ir.bm25.tokenising import STOPWORDS, split_words
from searchain_graph.ir.corpus import CorpusFormatError, PassageStore, iter_corpora, paragraph_id, write_passages
from searchain_graph.ir.index import build_index, load_index
from searchain_graph.ir.index_dir import MANIFEST, read_manifest, write_index

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples/data/searchain_demo.jsonl"
HOTPOT = ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl"

TEXTS = [
    "Kevin Drew was born in Toronto, Ontario.",
    "Toronto Coach Terminal: Greyhound buses leave from the terminal in Toronto.",
    "Spirit If... is an album by Kevin Drew, released in 2007.",
    "Broken Social Scene is a Canadian band.",
    "The album was recorded in Toronto by the band's members; the band toured Canada.",
]


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _lucene_bm25(texts: list[str], query: str, k1: float = 1.5, b: float = 0.75) -> list[float]:
    """BM25 computed the slow, obvious way, for comparison with the engine."""
    import Stemmer

    stem = Stemmer.Stemmer("english").stemWord

    def terms(text: str) -> list[str]:
        return [stem(w.decode()) for w in split_words(text) if w.decode() not in STOPWORDS]

    docs = [Counter(terms(t)) for t in texts]
    lengths = [sum(d.values()) for d in docs]
    avgdl = sum(lengths) / len(lengths)
    scores = []
    for doc, length in zip(docs, lengths, strict=True):
        score = 0.0
        for term in dict.fromkeys(terms(query)):
            df = sum(1 for d in docs if term in d)
            if term not in doc:
                continue
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            tf = doc[term]
            score += idf * tf / (tf + k1 * (1 - b + b * length / avgdl))
        scores.append(score)
    return scores


def test_split_words_handles_unicode_punctuation() -> None:
    assert split_words("“Hello”—World, café_x 2007!") == [b"hello", b"world", "café".encode(), b"x", b"2007"]
    assert split_words("") == []


def test_scores_equal_lucene_bm25() -> None:
    index = BM25Index.build(TEXTS, workers=1)
    for query in ("Where was Kevin Drew born?", "Toronto band album", "greyhound buses"):
        expected = _lucene_bm25(TEXTS, query)
        ids, scores = index.search(query, k=len(TEXTS))
        ranked = sorted((i for i, s in enumerate(expected) if s > 0), key=lambda i: (-expected[i], i))
        assert ids.tolist() == ranked
        np.testing.assert_allclose(scores, [expected[i] for i in ranked], rtol=1e-5)


def test_queries_without_known_terms_return_nothing() -> None:
    index = BM25Index.build(TEXTS, workers=1)
    assert index.search("the of and", k=3)[0].size == 0
    assert index.search("zyzzyva", k=3)[0].size == 0
    assert index.search("Toronto", k=0)[0].size == 0
    with pytest.raises(ValueError, match="empty corpus"):
        BM25Index.build([], workers=1)


def test_worker_processes_build_the_same_index() -> None:
    texts = TEXTS * 7
    single = BM25Index.build(texts, workers=1, chunk_size=4)
    seen: list[int] = []
    pooled = BM25Index.build(iter(texts), workers=2, chunk_size=4, progress=seen.append)
    assert sum(seen) == len(texts) and single.num_docs == pooled.num_docs == len(texts)
    for query in ("Kevin Drew Toronto", "band Canada"):
        a, b = single.search(query, k=10), pooled.search(query, k=10)
        assert a[0].tolist() == b[0].tolist()
        np.testing.assert_allclose(a[1], b[1], rtol=1e-6)


def test_spilled_shards_build_the_same_index(tmp_path: Path) -> None:
    from searchain_graph.ir.bm25.build import build_bm25

    texts = [f"{t} copy {n} {'extra words' * (n % 3)}" for n in range(9) for t in TEXTS]
    build_bm25(texts, tmp_path / "one", workers=1, chunk_size=5)  # one shard, one merge block
    build_bm25(texts, tmp_path / "many", workers=1, chunk_size=5, shard_rows=40)  # many of each
    one, many = BM25Index.load(tmp_path / "one"), BM25Index.load(tmp_path / "many")
    assert one.vocab == many.vocab
    for name in ("indices", "indptr", "doc_lengths"):
        assert np.array_equal(getattr(one, name), getattr(many, name)), name
    np.testing.assert_allclose(one.data, many.data, rtol=1e-6)
    np.testing.assert_allclose(one.max_scores, many.max_scores, rtol=1e-6)
    spans = zip(one.indptr[:-1], one.indptr[1:], strict=True)
    np.testing.assert_allclose(one.max_scores, [one.data[a:b].max() for a, b in spans], rtol=1e-6)
    for query in ("Kevin Drew Toronto", "band Canada extra", "copy 4"):
        a, b = one.search(query, k=10), many.search(query, k=10)
        assert a[0].tolist() == b[0].tolist()
        expected = _lucene_bm25(texts, query)
        np.testing.assert_allclose(b[1], sorted((s for s in expected if s > 0), reverse=True)[:10], rtol=1e-5)
    assert sorted(p.name for p in (tmp_path / "many").iterdir()) == sorted(
        [
            "bm25.json",
            "bm25_data.npy",
            "bm25_doc_lengths.npy",
            "bm25_indices.npy",
            "bm25_indptr.npy",
            "bm25_max_scores.npy",
        ]
    )  # the scratch shards are gone


@pytest.mark.parametrize(
    ("sparse_share", "seed_size"), [(1, 2048), (8, 16), (24, 512), (64, 16), (10**9, 16)]
)  # from all-sparse to all-dense merges (the defaults in the middle), with and without scoring a few in full first
def test_pruned_search_returns_the_exhaustive_top_k(sparse_share: int, seed_size: int) -> None:
    rng = random.Random(3)
    words = "alpha beta gamma delta epsilon toronto montreal bus terminal album singer river city".split()
    rare = [f"rare{n}" for n in range(30)]
    texts = [
        " ".join(rng.choices(words, k=rng.randint(3, 30)) + rng.sample(rare, rng.randint(0, 2))) for _ in range(3000)
    ]
    index = BM25Index.build(texts, workers=1)
    assert index.max_scores is not None and len(index.max_scores) == len(index.vocab)
    exhaustive = BM25Index(**{k: v for k, v in vars(index).items() if not k.startswith("_")} | {"max_scores": None})
    index.sparse_share, index.seed_size = sparse_share, seed_size
    for _ in range(300):
        query = " ".join(rng.choices(words + rare, k=rng.randint(2, 6)))
        for k in (1, 3, 10):
            a, b = index.search(query, k), exhaustive.search(query, k)
            np.testing.assert_allclose(a[1], b[1], rtol=1e-5)
            tied = np.isclose(b[1], b[1][-1], rtol=1e-5)  # the last score's ties may be cut either way
            assert a[0][~tied].tolist() == b[0][~tied].tolist()


def test_a_failed_build_removes_its_shards(tmp_path: Path) -> None:
    from searchain_graph.ir.bm25.build import build_bm25

    def broken() -> Iterator[str]:
        yield from TEXTS * 5
        raise OSError("the corpus disk went away")

    with pytest.raises(OSError, match="went away"):
        build_bm25(broken(), tmp_path, workers=1, chunk_size=3, shard_rows=10)
    assert list(tmp_path.iterdir()) == []


def test_save_and_load_memory_maps(tmp_path: Path) -> None:
    index = BM25Index.build(TEXTS, workers=1)
    index.save(tmp_path)
    loaded = BM25Index.load(tmp_path)
    assert isinstance(loaded.data, np.memmap)
    for query in ("Kevin Drew", "Toronto terminal"):
        assert index.search(query, 3)[0].tolist() == loaded.search(query, 3)[0].tolist()
    params = json.loads((tmp_path / "bm25.json").read_text())
    params["format_version"] = 99
    (tmp_path / "bm25.json").write_text(json.dumps(params))
    with pytest.raises(ValueError, match="rebuild it"):
        BM25Index.load(tmp_path)
    with pytest.raises(FileNotFoundError, match="no BM25 index"):
        BM25Index.load(tmp_path / "nowhere")


def test_qa_dataset_files_give_deduplicated_paragraphs(tmp_path: Path) -> None:
    ircot = {
        "question_id": "q1",
        "question_text": "Who?",
        "contexts": [
            {"id": "0", "title": "Kevin Drew", "paragraph_text": "Kevin Drew was born in Toronto."},
            {"id": "1", "title": "Spirit If...", "paragraph_text": "Spirit If... is an album."},
        ],
    }
    musique = {
        "id": "m1",
        "question": "Where?",
        "paragraphs": [
            {"idx": 0, "title": "Kevin Drew", "paragraph_text": "Kevin  Drew was born in Toronto."},
            {"idx": 1, "title": "Toronto", "paragraph_text": "Toronto is in Ontario."},
        ],
    }
    wiki = {"_id": "w1", "question": "Which?", "context": [["Ontario", ["Ontario is a province.", " Of Canada."]]]}
    first = _write(tmp_path / "ircot.jsonl", [json.dumps(ircot), json.dumps(ircot)])
    second = _write(tmp_path / "musique.jsonl", [json.dumps(musique)])
    third = tmp_path / "hotpot.json"
    third.write_text(json.dumps([wiki]), encoding="utf-8")
    docs = list(iter_corpora([first, second, third]))
    assert [(d.metadata["title"], d.page_content) for d in docs] == [
        ("Kevin Drew", "Kevin Drew was born in Toronto."),
        ("Spirit If...", "Spirit If... is an album."),
        ("Toronto", "Toronto is in Ontario."),
        ("Ontario", "Ontario is a province. Of Canada."),
    ]
    assert docs[0].metadata["id"] == paragraph_id("Kevin Drew", "Kevin Drew was born in Toronto.")
    bad = _write(tmp_path / "bad.jsonl", [json.dumps(ircot), json.dumps({"question": "x", "context": [["t", "s"]]})])
    with pytest.raises(CorpusFormatError, match=r"bad.jsonl:2: context\[0\] is neither"):
        list(iter_corpora(bad))
    not_array = tmp_path / "obj.json"
    not_array.write_text("{}", encoding="utf-8")
    with pytest.raises(CorpusFormatError, match="array of records"):
        list(iter_corpora(not_array))


def test_passage_store_reads_by_position(tmp_path: Path) -> None:
    docs = [Document(page_content=t, metadata={"id": str(i), "title": f"T{i} ünï"}) for i, t in enumerate(TEXTS)]
    assert list(write_passages(docs, tmp_path)) == docs
    store = PassageStore(tmp_path)
    assert len(store) == len(docs)
    assert store[3] == docs[3] and store[-1] == docs[-1]
    assert store[1:3] == docs[1:3]
    with pytest.raises(IndexError, match="out of range"):
        store[len(docs)]
    with pytest.raises(FileNotFoundError, match="no passages"):
        PassageStore(tmp_path / "missing")


def test_build_and_load_an_index(tmp_path: Path) -> None:
    tsv = _write(
        tmp_path / "psgs.tsv",
        ["id\ttext\ttitle", "1\tGreyhound buses leave from the Toronto Coach Terminal.\tToronto Coach Terminal"],
    )
    seen: list[int] = []
    summary = build_index([DEMO, tsv], tmp_path / "index", progress=seen.append)
    assert summary.passages == sum(seen) == 9 and summary.size_bytes > 0 and summary.passages_per_second > 0
    manifest = read_manifest(tmp_path / "index")
    assert manifest["retriever"] == "bm25" and manifest["passages"] == 9
    assert manifest["sources"] == [str(DEMO), str(tsv)]
    retriever = load_index(tmp_path / "index", k=2)
    assert isinstance(retriever, BM25Retriever) and len(retriever) == 9
    docs = retriever.invoke("Where do Greyhound buses leave from in Toronto?")
    assert len(docs) == 2
    assert docs[0].metadata["title"] == "Toronto Coach Terminal" and docs[0].metadata["score"] > 0
    assert retriever.invoke("Kevin Drew", k=1)[0].metadata["title"] == "Kevin Drew"
    in_memory = BM25Retriever.from_files([DEMO, tsv], k=3)
    for query in ("Kevin Drew born", "Broken Social Scene album"):
        assert [d.page_content for d in in_memory.invoke(query)] == [
            d.page_content for d in retriever.invoke(query, k=3)
        ]
    resaved = in_memory.save(tmp_path / "resaved", sources=["memory"])
    assert resaved.passages == 9 and load_index(resaved.directory).invoke("Kevin Drew")[0].metadata["id"]


def test_a_broken_line_stops_the_build_and_keeps_the_old_index(tmp_path: Path) -> None:
    out = tmp_path / "index"
    build_index(DEMO, out)
    before = (out / MANIFEST).read_text()
    broken = _write(tmp_path / "broken.jsonl", [json.dumps({"id": "a", "text": "fine"}), '{"id": "b", "text": '])
    with pytest.raises(CorpusFormatError, match=r"broken.jsonl:2: not valid JSON"):
        build_index([DEMO, broken], out)
    assert (out / MANIFEST).read_text() == before
    assert not (tmp_path / "index.partial").exists()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep me")
    with pytest.raises(FileExistsError, match="not a searchain index"):
        build_index(DEMO, tmp_path / "notes")
    assert (tmp_path / "notes" / "mine.txt").read_text() == "keep me"
    with pytest.raises(FileNotFoundError, match="not a searchain index"):
        load_index(tmp_path / "notes")
    with pytest.raises(ValueError, match="unknown retriever"):
        build_index(DEMO, tmp_path / "x", retriever="nope")  # type: ignore[arg-type]


def test_cli_index_reports_throughput_and_line_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(DEMO), "--out", str(tmp_path / "idx"), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "indexed 8 passages from 1 file(s)" in out and "passages/s" in out and "MiB" in out
    broken = _write(tmp_path / "broken.jsonl", [json.dumps({"id": "a", "text": "fine"}), json.dumps({"id": "b"})])
    assert main(["index", str(broken), "--out", str(tmp_path / "idx2"), "--quiet"]) == 2
    assert "broken.jsonl:2: no passage text" in capsys.readouterr().err
    assert main(["index", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "idx3"), "--quiet"]) == 2
    assert "corpus file not found" in capsys.readouterr().err


def test_cli_index_refuses_a_file_as_out_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    taken = _write(tmp_path / "notes.txt", ["keep me"])
    assert main(["index", str(DEMO), "--out", str(taken)]) == 2
    captured = capsys.readouterr()
    assert (
        captured.err
        == f"searchain: error: {taken} exists and is not a directory: refusing to replace it with an index\n"
    )
    assert captured.out == ""
    assert main(["index", str(DEMO), "--out", str(taken / "idx"), "--quiet"]) == 2
    assert f"{taken} is a file, not a directory" in capsys.readouterr().err
    assert taken.read_text() == "keep me\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]  # no notes.txt.partial


def test_a_build_failing_at_the_swap_leaves_no_partial(tmp_path: Path) -> None:
    out = tmp_path / "index"

    def write(partial: Path, progress: object) -> int:
        out.write_text("appeared during the build")  # the swap must refuse it
        return 0

    with pytest.raises(FileExistsError, match="exists and is not a directory"):
        write_index(out, "bm25", [], write)
    assert out.read_text() == "appeared during the build"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index"]


def test_cli_asks_against_a_built_index(tmp_path: Path, tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", str(DEMO), "--out", str(tmp_path / "idx"), "--quiet"]) == 0
    capsys.readouterr()
    code = main(
        ["ask", "Where was Kevin Drew born?", "--index", str(tmp_path / "idx"), "--model", str(tiny_llm_dir)]
        + ["--max-new-tokens", "8", "--json", "--quiet"]
    )
    assert code == 0
    assert json.loads(capsys.readouterr().out)["usage"]["llm_calls"] >= 1


@functools.cache
def _shared_index() -> str:
    directory = Path(tempfile.mkdtemp(prefix="searchain-bm25-")) / "index"
    build_index([DEMO, HOTPOT], directory, workers=1)
    return str(directory)


class TestBM25RetrieverStandard(RetrieversIntegrationTests):
    """langchain-tests' standard retriever suite, on a saved index of 2,007 real passages."""

    @property
    def retriever_constructor(self) -> type[BaseRetriever]:
        return BM25Retriever

    @property
    def retriever_constructor_params(self) -> dict[str, object]:
        return {"index_dir": _shared_index(), "k": 2}

    @property
    def retriever_query_example(self) -> str:
        return "Which album did Kevin Drew release, and where was he born?"


def test_radix_argsort_is_a_stable_sort() -> None:
    from searchain_graph.ir.bm25.build import stable_argsort_u32

    rng = np.random.default_rng(0)
    for high in (50, 70_000, 2**31 - 1):
        values = rng.integers(0, high, 5000).astype(np.int32)
        assert np.array_equal(stable_argsort_u32(values), np.argsort(values, kind="stable"))


async def test_ainvoke_takes_k(tmp_path: Path) -> None:
    retriever = BM25Retriever.from_files(DEMO, k=3)
    docs = await retriever.ainvoke("Kevin Drew born", k=1)
    assert len(docs) == 1 and docs[0].metadata["title"] == "Kevin Drew"
    assert len(await retriever.ainvoke("Kevin Drew born")) == 3


def test_retain_freed_memory_takes_on_glibc_and_queries_stay_the_same() -> None:
    # In a child process: the setting is process-wide and stays, so it must not leak into other tests.
    import platform
    import subprocess
    import sys

    script = f"""
import json, numpy as np
from searchain_graph.ir.bm25.index import BM25Index, retain_freed_memory
texts = {TEXTS!r}
index = BM25Index.build(texts, workers=1)
before = [index.search(text, 3) for text in texts]
took = retain_freed_memory()
after = [index.search(text, 3) for text in texts]
print(json.dumps({{"took": took, "ids": [[a[0].tolist(), b[0].tolist()] for a, b in zip(before, after)],
                  "scores": [[a[1].tolist(), b[1].tolist()] for a, b in zip(before, after)]}}))
"""
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    result = json.loads(child.stdout)
    assert result["took"] is (platform.libc_ver()[0] == "glibc")
    for before, after in result["ids"]:
        assert after == before
    for before, after in result["scores"]:
        np.testing.assert_allclose(after, before, rtol=1e-6)
