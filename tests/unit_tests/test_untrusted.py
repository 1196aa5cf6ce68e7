"""Untrusted files and secrets: safe loading formats, no path escapes, bounded lines, no key leaks."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from searchain_graph.cli.main import _build_parser, main
from searchain_graph.ir.corpus import MAX_LINE_BYTES, CorpusFormatError, load_corpus
from searchain_graph.ir.index import build_index, load_index
from tests.fakes import PASSAGES, QUESTION

SRC = Path(__file__).resolve().parents[2] / "src" / "searchain_graph"


def _calls(tree: ast.AST) -> list[ast.Call]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call)]


def _name(call: ast.Call) -> str:
    func = call.func
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _keyword(call: ast.Call, name: str) -> object:
    for kw in call.keywords:
        if kw.arg == name and isinstance(kw.value, ast.Constant):
            return kw.value.value
    return None


def test_no_unsafe_deserialisation_in_the_package() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                if any(n and n.split(".")[0] in {"pickle", "cPickle", "dill", "marshal", "shelve"} for n in names):
                    found.append(f"{path.name}:{node.lineno}: imports {names}")
        for call in _calls(tree):
            name = _name(call)
            where = f"{path.name}:{call.lineno}: {name}"
            if name in {"eval", "exec"}:
                found.append(where)
            if name.endswith("yaml.load") or name.endswith("yaml.unsafe_load"):
                found.append(where)
            if name.endswith("torch.load") and _keyword(call, "weights_only") is not True:
                found.append(where + " without weights_only=True")
            if name in {"np.load", "numpy.load"} and _keyword(call, "allow_pickle") is not False:
                found.append(where + " without allow_pickle=False")
    assert found == []


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    rows = [{"id": d.metadata["id"], "title": d.metadata["title"], "text": d.page_content} for d in PASSAGES]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("target", ["bm25_data.npy", "passages.offsets.npy"])
def test_a_crafted_pickle_in_an_index_is_refused(tmp_path: Path, corpus: Path, target: str) -> None:
    index = tmp_path / "index"
    build_index(corpus, index)
    assert load_index(index, k=1).invoke("Kevin Drew")
    crafted = np.array([{"payload": "would run on unpickling"}, None], dtype=object)
    with (index / target).open("wb") as handle:
        np.save(handle, crafted, allow_pickle=True)
    with pytest.raises(ValueError, match=rf"{target}: not a plain numeric array .*refusing"):
        load_index(index, k=1).invoke("Kevin Drew")


def test_ids_and_titles_never_become_paths(tmp_path: Path) -> None:
    hostile = ["../../escape", "/etc/passwd", "..\\..\\win", "a/../../b", "\x00nul", "~/home"]
    path = tmp_path / "corpus.jsonl"
    rows = [{"id": h, "title": h, "text": f"Passage {n} about Kevin Drew."} for n, h in enumerate(hostile)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    before = {p for p in tmp_path.parent.rglob("*")}
    build_index(path, tmp_path / "index")
    created = {p for p in tmp_path.parent.rglob("*")} - before
    assert created and all(p.is_relative_to(tmp_path / "index") for p in created), sorted(created)
    docs = load_index(tmp_path / "index", k=6).invoke("Kevin Drew")
    assert sorted(d.metadata["id"] for d in docs) == sorted(hostile)


def test_a_huge_line_is_refused_with_its_number(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps({"id": "1", "text": "fine"}) + "\n")
        handle.write('{"id": "2", "text": "' + "x" * (MAX_LINE_BYTES + 10) + '"}\n')
    with pytest.raises(CorpusFormatError, match=rf"corpus.jsonl:2: line longer than {MAX_LINE_BYTES} bytes"):
        load_corpus(path)


def test_bytes_that_are_not_utf8_are_refused_with_their_line(tmp_path: Path) -> None:
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'{"id": "1", "text": "fine"}\n\n{"id": "3", "text": "caf\xe9"}\n')
    with pytest.raises(CorpusFormatError, match=r"corpus.jsonl:3: not UTF-8 text"):
        load_corpus(path)
    tsv = tmp_path / "psgs.tsv"
    tsv.write_bytes(b"id\ttext\ttitle\n1\tfine\tA\n2\tcaf\xe9\tB\n")
    with pytest.raises(CorpusFormatError, match=r"psgs.tsv:\d+: not UTF-8 text"):
        load_corpus(tsv)


def test_the_server_listens_on_loopback_unless_asked() -> None:
    args = _build_parser().parse_args(["serve", "--corpus", "c.jsonl"])
    assert args.host == "127.0.0.1"
    for path in SRC.rglob("*.py"):
        assert "0.0.0.0" not in path.read_text(encoding="utf-8"), path


def test_an_api_key_is_never_printed_or_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "sk-test-" + "7" * 40
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    data = tmp_path / "hotpot.jsonl"
    row = {
        "question_id": "h0",
        "question_text": QUESTION,
        "answers_objects": [{"spans": ["Toronto Coach Terminal"]}],
        "contexts": [{"title": d.metadata["title"], "paragraph_text": d.page_content} for d in PASSAGES],
    }
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "results.jsonl"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "searchain,cot"]
    args += ["--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--out", str(out), "--quiet"]
    assert main(args) == 0
    printed = capsys.readouterr()
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p != data]
    assert out in written and any(p.name == "report.md" for p in written)
    for path in written:
        assert secret not in path.read_bytes().decode("utf-8", "replace"), path
    assert secret not in printed.out + printed.err
    assert not re.search(r"sk-test-7{10}", printed.out + printed.err)
