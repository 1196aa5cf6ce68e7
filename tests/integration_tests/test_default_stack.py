"""The real default stack, SmolLM2-135M + BM25 + the LLM reader, on HotpotQA questions.

Questions come from ``../shared/data`` when it is there (set ``SEARCHAIN_SHARED_DATA`` to
point elsewhere), else from the copy shipped in ``examples/data``. The checks are on the
output's structure and invariants, not on accuracy: a 135M model is a demo of the machinery.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from searchain_graph import BM25Retriever, LLMReader, TransformersChatModel, create_searchain_graph
from searchain_graph.method.parsing import citations

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SEARCHAIN_SHARED_DATA", ROOT.parent / "shared" / "data"))
N_QUESTIONS = int(os.environ.get("SEARCHAIN_IT_QUESTIONS", "5"))


def _questions() -> list[dict[str, Any]]:
    shared = SHARED / "hotpotqa" / "ircot_dev_subsampled.first200.jsonl"
    path = shared if shared.is_file() else ROOT / "examples/data/hotpotqa_dev20_questions.jsonl"
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle][:N_QUESTIONS]


@pytest.fixture(scope="module")
def stack() -> tuple[Any, BM25Retriever]:
    try:
        llm = TransformersChatModel.from_smollm2(max_new_tokens=160).load()
    except FileNotFoundError as exc:  # pragma: no cover - CI installs it
        pytest.skip(str(exc))
    retriever = BM25Retriever.from_files(ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl", k=1)
    return create_searchain_graph(llm, retriever, LLMReader(llm), max_rounds=3), retriever


@pytest.mark.parametrize("record", _questions(), ids=lambda r: r["question_id"])
def test_default_stack_answers_with_a_well_formed_trace(
    stack: tuple[Any, BM25Retriever], record: dict[str, Any]
) -> None:
    graph, retriever = stack
    out = graph.invoke({"question": record["question_text"]})

    assert out["question"] == record["question_text"]
    assert isinstance(out["answer"], str) and out["answer"].strip()
    assert isinstance(out["final_content"], str) and out["final_content"].strip()
    assert 1 <= out["rounds"] <= 3
    assert len(out["tree"]) == out["rounds"]
    assert [b["round"] for b in out["tree"]] == list(range(1, out["rounds"] + 1))
    for later in out["tree"][1:]:
        assert later["parent"] is not None and later["parent"]["kind"] in {"correction", "completion"}

    refs = out["references"]
    assert [r["index"] for r in refs] == list(range(1, len(refs) + 1))
    corpus_texts = {d.page_content for d in retriever._docs}
    for ref in refs:
        assert ref["source"] in {"llm", "corrected", "completed"}
        assert ref["document"] is None or ref["document"]["page_content"] in corpus_texts
        if ref["source"] != "llm":
            assert ref["answer"] == ref["reader_answer"]
    assert all(1 <= n <= len(refs) for n in citations(out["final_content"]))
    if refs:
        assert citations(out["final_content"]), "a traced answer must cite the path"

    usage = out["usage"]
    # One call a round, and the tracing call unless IR stands behind every step (compose_supported).
    assert out["rounds"] <= usage["llm_calls"] <= out["rounds"] + (1 if refs else 0)
    assert usage["words_in"] > 0 and usage["words_out"] > 0
    assert usage["input_tokens"] > usage["output_tokens"] > 0
    json.dumps(out)  # plain data all the way down
    assert not any(re.search(r"Traceback|Exception", w) for w in out["warnings"])
