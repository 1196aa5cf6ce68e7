"""A bare install (no torch, transformers or llama.cpp) runs the graph; a local part names its extra."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from searchain_graph.llms.extras import MissingExtraError, require

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ("torch", "transformers", "accelerate", "gguf", "xllamacpp", "onnxruntime_genai", "onnx", "onnx_ir")


def test_a_missing_module_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)
    with pytest.raises(
        MissingExtraError, match=r"a GGUF model needs xllamacpp.*pip install 'searchain-graph\[local\]'"
    ):
        require(("xllamacpp",), "a GGUF model")
    monkeypatch.setitem(sys.modules, "onnx_ir", None)
    with pytest.raises(MissingExtraError, match=r"searchain-graph\[local,onnx\].*or use llama.cpp"):
        require(("xllamacpp", "onnx_ir"), "the ONNX backend", "or use llama.cpp")
    require(("json",), "nothing")  # installed: no error


def test_without_the_local_extra_the_graph_runs_on_any_model_and_says_what_to_add() -> None:
    script = textwrap.dedent(
        f"""
        import sys
        for name in {LOCAL!r}:
            sys.modules[name] = None  # as a bare `pip install searchain-graph` leaves them: not importable
        from searchain_graph import BM25Retriever, LLMReader, create_searchain_graph
        from searchain_graph.llms.extras import MissingExtraError
        from tests.fakes import QUESTION, retriever, tree_llm

        llm = tree_llm()
        graph = create_searchain_graph(llm, retriever(), LLMReader(llm), duplicates="text")
        out = graph.invoke({{"question": QUESTION}})
        assert out["answer"] and out["rounds"] >= 1, out
        try:
            create_searchain_graph(llm, retriever(), LLMReader(llm))  # the tuned preset: duplicates by meaning
        except MissingExtraError as exc:
            print("REFUSED:", exc)
        from searchain_graph import BundledReader
        try:
            BundledReader().load()
        except MissingExtraError as exc:
            print("READER:", exc)
        assert not any(sys.modules.get(n) for n in {LOCAL!r})
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "REFUSED: duplicates='meaning'" in done.stdout and "or pass duplicates='text'" in done.stdout
    assert "searchain-graph[local]" in done.stdout and "READER: the bundled reader needs torch" in done.stdout
