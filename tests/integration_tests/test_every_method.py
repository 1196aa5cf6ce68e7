"""Every registered method on the real default stack: SmolLM2 + BM25 + the bundled reader.

Each method of ``searchain eval`` runs through the harness on HotpotQA questions and is checked
for what any run must satisfy: a record without an error, counted usage that fits the method (no
retrieval for the closed-book methods, no reading for those that do not read, as their records in
:data:`~searchain_graph.evaluation.methods.METHODS` say; at least one LLM call each), and a report row. Not
accuracy: a 135M model is a demo of the machinery.
``SEARCHAIN_IT_METHOD_QUESTIONS`` sets the questions per method (default 2: 34 runs, about 185 s on
two CPU cores, about 90 s more for each question more; the checks are the same for every record,
and the default keeps CI under its 30 minutes).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from searchain_graph import BM25Retriever, TransformersChatModel
from searchain_graph.evaluation.dataset_loading import load_dataset
from searchain_graph.evaluation.harness import read_records, run_evaluation
from searchain_graph.evaluation.methods import METHODS
from searchain_graph.evaluation.report import render_report
from searchain_graph.ir.readers.load import load_reader

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SEARCHAIN_SHARED_DATA", ROOT.parent / "shared" / "data"))
N_QUESTIONS = int(os.environ.get("SEARCHAIN_IT_METHOD_QUESTIONS", "1"))  # CI time; more with the variable
CLOSED_BOOK = {name for name, spec in METHODS.items() if not spec.retrieves}


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    shared = SHARED / "hotpotqa" / "ircot_dev_subsampled.first200.jsonl"
    path = shared if shared.is_file() else ROOT / "examples/data/hotpotqa_dev20_questions.jsonl"
    examples = load_dataset("hotpotqa", path, limit=N_QUESTIONS)
    try:
        llm = TransformersChatModel.from_smollm2(max_new_tokens=160).load()
    except FileNotFoundError as exc:  # pragma: no cover - CI installs it
        pytest.skip(str(exc))
    retriever = BM25Retriever.from_files(ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl", k=3)
    out = tmp_path_factory.mktemp("every-method") / "results.jsonl"
    summary = run_evaluation(
        examples, list(METHODS), llm=llm, retriever=retriever, reader=load_reader("bundled", llm), out_path=out
    )
    assert summary.errors == 0
    return read_records(out)


def test_every_method_runs_every_question(records: list[dict[str, Any]]) -> None:
    assert sorted({r["method"] for r in records}) == sorted(METHODS)
    assert len(records) == len(METHODS) * N_QUESTIONS
    assert all(r["error"] is None for r in records), [r["error"] for r in records if r["error"]]
    json.dumps(records)  # plain data all the way down


@pytest.mark.parametrize("method", list(METHODS))
def test_each_method_counts_what_it_did(records: list[dict[str, Any]], method: str) -> None:
    for record in (r for r in records if r["method"] == method):
        usage = record["usage"]
        assert usage["llm_calls"] >= 1 and usage["words_in"] > 0 and usage["input_tokens"] > 0
        assert isinstance(record["prediction"], str) and isinstance(record["warnings"], list)
        if method in CLOSED_BOOK:
            assert usage["retrieval_calls"] == 0
        if not METHODS[method].reads:
            assert usage["reader_calls"] == 0
        assert record["seconds"] > 0 and record["metrics"]["cover_em"] in (0.0, 1.0)


def test_the_report_has_a_row_per_method(records: list[dict[str, Any]]) -> None:
    report = render_report(records)
    for method in METHODS:
        assert f"| {method} |" in report or f"| `{method}` |" in report, method
