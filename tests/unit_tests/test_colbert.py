"""ColBERTRetriever on a tiny random-init ColBERT checkpoint (needs the ``colbert`` extra).

The checkpoint is colbert-ai's own HF_ColBERT class (BertModel + linear projection) with a
word-level vocabulary written here, saved in the layout RAGatouille loads
(config.json, model.safetensors, tokenizer files, artifact.metadata). The first run on a
machine compiles colbert-ai's C++ extensions (minutes; cached in TORCH_EXTENSIONS_DIR).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document

from searchain_graph.ir import _ragatouille_compat
from searchain_graph.ir.colbert import DEFAULT_CHECKPOINT, ColBERTRetriever
from searchain_graph.ir.corpus import load_corpus, passage_text
from searchain_graph.ir.index import build_index, load_index
from searchain_graph.ir.index_dir import read_manifest
from searchain_graph.llms.hub import ModelNotFoundError
from tests.tiny_models import build_tiny_colbert

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
# `pytest.importorskip("ragatouille")` would import it without the shim, which fails on langchain 1.x.
needs_colbert = pytest.mark.skipif(
    importlib.util.find_spec("ragatouille") is None, reason="needs the colbert extra (RAGatouille)"
)

# colbert-ai packs residuals with nbits=4 for corpora under 10k passages: dim must be a multiple of 32.
DIM = 32


@pytest.fixture(scope="module")
def corpus() -> list[Document]:
    """50 real passages: the 8 demo passages and the first 42 HotpotQA paragraphs."""
    docs = load_corpus(DATA / "searchain_demo.jsonl") + load_corpus(DATA / "hotpotqa_dev200_paragraphs.jsonl")[:42]
    assert len({d.metadata["id"] for d in docs}) == 50
    return docs


@pytest.fixture(scope="module")
def tiny_colbert_dir(tmp_path_factory: pytest.TempPathFactory, corpus: list[Document]) -> Path:
    if importlib.util.find_spec("ragatouille") is None:
        pytest.skip("needs the colbert extra (RAGatouille)")
    rag_class = _ragatouille_compat.import_ragatouille()
    assert rag_class.__name__ == "RAGPretrainedModel"
    texts = [passage_text(doc) for doc in corpus]
    return build_tiny_colbert(tmp_path_factory.mktemp("tiny-colbert"), texts, dim=DIM)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, tiny_colbert_dir: Path, corpus: list[Document]) -> ColBERTRetriever:
    index_dir = tmp_path_factory.mktemp("colbert-index") / "index"
    retriever = ColBERTRetriever.from_documents(corpus, index_dir, checkpoint=tiny_colbert_dir, k=3)
    assert retriever.index_dir == str(index_dir.resolve())
    return retriever


def _hits(docs: list[Document]) -> list[tuple[str, float]]:
    return [(d.metadata["id"], d.metadata["score"]) for d in docs]


def _assert_same_hits(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    assert [i for i, _ in got] == [i for i, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], rel=1e-4)


def test_index_layout(built: ColBERTRetriever, tiny_colbert_dir: Path) -> None:
    directory = Path(built.index_dir)
    manifest = read_manifest(directory)
    assert manifest["retriever"] == "colbert"
    assert manifest["passages"] == len(built) == 50
    assert manifest["checkpoint"] == str(tiny_colbert_dir.resolve())
    assert (directory / "passages.jsonl").is_file() and (directory / "passages.offsets.npy").is_file()
    plaid = directory / "colbert" / "indexes" / "passages"
    assert (plaid / "metadata.json").is_file() and (plaid / "ivf.pid.pt").is_file()
    # The index encodes passage_text(doc) ("title\ntext"), like BM25.
    assert json.loads((plaid / "collection.json").read_text())[1] == "Kevin Drew\n" + built._docs[1].page_content
    assert not directory.with_name(directory.name + ".partial").exists()


def test_build_index_and_load_index(tiny_colbert_dir: Path, tmp_path: Path) -> None:
    reported: list[int] = []
    summary = build_index(
        DATA / "searchain_demo.jsonl",
        tmp_path / "demo",
        retriever="colbert",
        checkpoint=str(tiny_colbert_dir),
        progress=reported.append,
    )
    assert (summary.retriever, summary.passages, sum(reported)) == ("colbert", 8, 8)
    assert summary.size_bytes > 0 and summary.passages_per_second > 0
    retriever = load_index(tmp_path / "demo", k=2)
    assert isinstance(retriever, ColBERTRetriever)
    demo = load_corpus(DATA / "searchain_demo.jsonl")
    top = retriever.invoke(passage_text(demo[1]))
    assert len(top) == 2 and top[0].metadata["id"] == demo[1].metadata["id"]


def test_exact_passage_text_ranks_its_passage_first(built: ColBERTRetriever, corpus: list[Document]) -> None:
    # Meaningful even at random init: a query with a passage's exact text shares every token
    # with it, so its MaxSim score against that passage is the highest.
    for doc in corpus:
        top = built.invoke(passage_text(doc), k=1)
        assert [d.metadata["id"] for d in top] == [doc.metadata["id"]]


def test_results_round_trip_metadata(built: ColBERTRetriever, corpus: list[Document]) -> None:
    by_id = {d.metadata["id"]: d for d in corpus}
    results = built.invoke("Where was Kevin Drew born?")
    assert len(results) == 3
    scores = [d.metadata["score"] for d in results]
    assert all(isinstance(s, float) for s in scores) and scores == sorted(scores, reverse=True)
    for doc in results:
        original = by_id[doc.metadata["id"]]
        assert doc.page_content == original.page_content
        assert {k: v for k, v in doc.metadata.items() if k != "score"} == original.metadata
        assert "score" not in original.metadata


def test_k_handling(built: ColBERTRetriever) -> None:
    query = "Broken Social Scene Toronto"
    assert len(built.invoke(query)) == 3
    assert len(built.invoke(query, k=1)) == 1
    assert len(built.invoke(query, k=7)) == 7
    assert built.invoke(query, k=0) == []
    assert len(built.invoke(query, k=500)) == 50
    assert len(ColBERTRetriever(index_dir=built.index_dir).invoke(query)) == 1  # default k=1


async def test_ainvoke_takes_k(built: ColBERTRetriever) -> None:
    query = "Broken Social Scene Toronto"
    assert [d.metadata["id"] for d in await built.ainvoke(query, k=2)] == [
        d.metadata["id"] for d in built.invoke(query, k=2)
    ]


def test_reload_from_disk_without_reencoding(
    built: ColBERTRetriever, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from colbert.indexing.collection_encoder import CollectionEncoder
    from colbert.modeling.checkpoint import Checkpoint

    queries = ["Where was Kevin Drew born?", "Shirley Temple", "intercity bus station", "Corliss Archer radio"]
    expected = [_hits(built.invoke(q, k=5)) for q in queries]

    # A copy elsewhere: the index is relocatable (the checkpoint path stays absolute).
    copy = tmp_path / "copied-index"
    shutil.copytree(built.index_dir, copy)
    before = {p: p.stat().st_mtime_ns for p in copy.rglob("*")}

    def no_encoding(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the corpus was encoded again")

    monkeypatch.setattr(Checkpoint, "docFromText", no_encoding)
    monkeypatch.setattr(CollectionEncoder, "encode_passages", no_encoding)
    reloaded = ColBERTRetriever.load(copy, k=5)
    assert reloaded._rag is not None and len(reloaded) == 50
    got = [_hits(reloaded.invoke(q)) for q in queries]
    for hits, exp in zip(got, expected, strict=True):
        _assert_same_hits(hits, exp)
    assert {p: p.stat().st_mtime_ns for p in copy.rglob("*")} == before

    lazy = ColBERTRetriever(index_dir=copy, k=5)  # loads the model on the first query
    assert lazy._rag is None
    _assert_same_hits(_hits(lazy.invoke(queries[0])), expected[0])


def test_checkpoint_moved_then_relinked(
    built: ColBERTRetriever, tiny_colbert_dir: Path, tmp_path: Path, corpus: list[Document]
) -> None:
    checkpoint = tmp_path / "ckpt"
    shutil.copytree(tiny_colbert_dir, checkpoint)
    index = ColBERTRetriever.from_documents(corpus[:5], tmp_path / "index", checkpoint=checkpoint)
    expected = _hits(index.invoke("Kevin Drew", k=2))
    moved = tmp_path / "ckpt-moved"
    checkpoint.rename(moved)
    with pytest.raises(ModelNotFoundError, match=r"checkpoint=DIR"):
        ColBERTRetriever.load(tmp_path / "index")
    relinked = ColBERTRetriever.load(tmp_path / "index", checkpoint=moved)
    _assert_same_hits(_hits(relinked.invoke("Kevin Drew", k=2)), expected)
    assert read_manifest(tmp_path / "index")["checkpoint"] == str(moved)
    assert ColBERTRetriever.load(tmp_path / "index")._rag is not None


def test_tiny_corpus_and_replacing(tiny_colbert_dir: Path, tmp_path: Path, corpus: list[Document]) -> None:
    one = ColBERTRetriever.from_documents(corpus[:1], tmp_path / "one", checkpoint=tiny_colbert_dir, k=4)
    assert [d.metadata["id"] for d in one.invoke("anything")] == [corpus[0].metadata["id"]]
    two = ColBERTRetriever.from_documents(corpus[1:3], tmp_path / "one", checkpoint=tiny_colbert_dir)
    assert sorted(d.metadata["id"] for d in two.invoke("x", k=5)) == sorted(d.metadata["id"] for d in corpus[1:3])
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not an index")
    with pytest.raises(FileExistsError, match="not a searchain index"):
        ColBERTRetriever.from_documents(corpus[:2], tmp_path / "other", checkpoint=tiny_colbert_dir)
    with pytest.raises(ValueError, match="empty corpus"):
        ColBERTRetriever.from_documents([], tmp_path / "empty", checkpoint=tiny_colbert_dir)
    assert not (tmp_path / "empty").exists() and not (tmp_path / "empty.partial").exists()


@needs_colbert
def test_missing_checkpoint_directory(tmp_path: Path, corpus: list[Document]) -> None:
    with pytest.raises(ModelNotFoundError, match="ColBERT checkpoint directory not found"):
        ColBERTRetriever.from_documents(corpus[:3], tmp_path / "index", checkpoint=tmp_path / "no-such-checkpoint")
    (tmp_path / "not-a-model").mkdir()
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        ColBERTRetriever.from_documents(corpus[:3], tmp_path / "index", checkpoint=tmp_path / "not-a-model")
    assert not (tmp_path / "index").exists() and not (tmp_path / "index.partial").exists()


@needs_colbert
def test_hub_name_offline(tmp_path: Path, corpus: list[Document]) -> None:
    assert DEFAULT_CHECKPOINT == "colbert-ir/colbertv2.0"
    with pytest.raises(ModelNotFoundError, match="pass the local directory instead of the name"):
        ColBERTRetriever.from_documents(corpus[:3], tmp_path / "index", checkpoint="searchain-tests/no-such-colbert")
    assert not (tmp_path / "index").exists()


def test_not_a_colbert_index(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a searchain index"):
        ColBERTRetriever(index_dir=tmp_path / "missing")
    build_index(DATA / "searchain_demo.jsonl", tmp_path / "bm25", retriever="bm25")
    with pytest.raises(ValueError, match="'bm25' index, not a ColBERT one"):
        ColBERTRetriever.load(tmp_path / "bm25")


def test_missing_extra_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_ragatouille_compat, "_APPLIED", False)
    monkeypatch.setitem(sys.modules, "ragatouille", None)  # makes `import ragatouille` fail
    with pytest.raises(ImportError, match=r"pip install 'searchain-graph\[colbert\]'"):
        _ragatouille_compat.import_ragatouille()


@needs_colbert
def test_shim_is_idempotent_and_leaves_langchain_alone() -> None:
    first = _ragatouille_compat.import_ragatouille()
    assert _ragatouille_compat.import_ragatouille() is first
    assert "langchain.retrievers" not in sys.modules or hasattr(sys.modules["langchain.retrievers"], "__file__")
    from colbert.modeling import base_colbert, hf_colbert

    assert base_colbert.class_factory is hf_colbert.class_factory
    assert getattr(hf_colbert.class_factory, "_searchain_patched", False)


def test_an_index_build_loads_every_extension(built: ColBERTRetriever) -> None:
    import importlib

    classes = [getattr(importlib.import_module(m), c) for m, c, _ in _ragatouille_compat.EXTENSION_LOADERS]
    assert all(hasattr(cls, "loaded_extensions") for cls in classes)
    assert _ragatouille_compat.compile_extensions() == 0  # a later call only finds them loaded
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        _ragatouille_compat.compile_extensions(workers=0)


@needs_colbert
def test_extensions_compile_side_by_side(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The loaders run in worker threads at once; colbert-ai would run them one after another."""
    import threading
    import time
    import types

    import torch

    started: list[str] = []
    both_running = threading.Barrier(2, timeout=10)

    def loader(name: str) -> type:
        def try_load_torch_extensions(cls: type, use_gpu: bool) -> None:
            assert use_gpu is False
            started.append(threading.current_thread().name)
            if len(started) <= 2:
                both_running.wait()  # fails (BrokenBarrierError) unless two loaders run at once
            time.sleep(0.01)
            cls.loaded_extensions = True

        return type(name, (), {"try_load_torch_extensions": classmethod(try_load_torch_extensions)})

    fake = types.ModuleType("searchain_fake_colbert")
    for name in ("A", "B", "C"):
        setattr(fake, name, loader(name))
    fake.C.loaded_extensions = True  # already loaded: skipped
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(
        _ragatouille_compat, "EXTENSION_LOADERS", tuple((fake.__name__, n, (f"{n.lower()}_cpp",)) for n in "ABC")
    )
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert _ragatouille_compat.compile_extensions(workers=2) == 2
    assert len(started) == 2 and all(t.startswith("colbert-compile") for t in started)
    assert _ragatouille_compat.compile_extensions(workers=2) == 0
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    del fake.A.loaded_extensions
    assert _ragatouille_compat.compile_extensions() == 0  # colbert-ai's CUDA path compiles its own


try:
    from langchain_tests.integration_tests import RetrieversIntegrationTests
except ImportError:  # langchain-tests is optional
    RetrieversIntegrationTests = None

if RetrieversIntegrationTests is not None:

    class TestColBERTRetrieverStandard(RetrieversIntegrationTests):
        """LangChain's standard retriever tests, on the index built above."""

        @pytest.fixture(autouse=True)
        def _index_dir(self, built: ColBERTRetriever) -> None:
            self._built_index_dir = built.index_dir

        @property
        def retriever_constructor(self) -> type[ColBERTRetriever]:
            return ColBERTRetriever

        @property
        def retriever_constructor_params(self) -> dict[str, Any]:
            return {"index_dir": self._built_index_dir}

        @property
        def retriever_query_example(self) -> str:
            return "Where was Kevin Drew born?"
