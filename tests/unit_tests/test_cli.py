"""The CLI end to end on a tiny random model: an LLM that ignores the format must not crash it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchain_graph.cli import main

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples/data/searchain_demo.jsonl")
QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"


def test_ask_with_a_model_that_ignores_the_format(tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ask", QUESTION, "--corpus", DEMO, "--model", str(tiny_llm_dir), "--max-new-tokens", "24", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    out = json.loads(captured.out)
    assert out["rounds"] == 1
    assert isinstance(out["answer"], str)
    assert out["usage"]["llm_calls"] >= 1
    assert "round 1: CoQ with" in captured.err


def test_ask_prints_answer_steps_and_passages(tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ask", QUESTION, "--corpus", DEMO, "--model", str(tiny_llm_dir), "--max-new-tokens", "8", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.startswith(f"Question: {QUESTION}\nAnswer:")
    assert "round(s)," in captured.out
    assert captured.err.strip() == "" or captured.err.startswith("note:")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corpus", "missing.jsonl"], "corpus file not found"),
        (["--corpus", DEMO, "--model", "/no/such/model"], "model directory not found"),
        (["--corpus", DEMO, "--task", "poetry"], "unknown task"),
    ],
)
def test_errors_are_reported_not_raised(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", QUESTION, *args]) == 2
    assert message in capsys.readouterr().err


def test_broken_corpus_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": 1, "text": "fine"}\n{"id": 2, "text": \n', encoding="utf-8")
    assert main(["ask", QUESTION, "--corpus", str(corpus)]) == 2
    assert "c.jsonl:2: not valid JSON" in capsys.readouterr().err
