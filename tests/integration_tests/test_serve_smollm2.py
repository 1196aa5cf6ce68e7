"""``searchain serve``'s app over the real default stack: SmolLM2-135M, BM25 and the bundled reader.

The browser test drives the page with a rule-based LLM; this one follows a real run's events
(in process, through Starlette's test client) to its answer, as the page would.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("starlette")

from langgraph.checkpoint.memory import InMemorySaver
from starlette.testclient import TestClient

from searchain_graph import BM25Retriever, BundledReader, TransformersChatModel, create_searchain_graph
from searchain_graph.serve import create_app
from tests.helpers import read_events

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def test_a_real_run_streams_its_tree_to_the_answer() -> None:
    try:
        llm = TransformersChatModel.from_smollm2(max_new_tokens=160).load()
    except FileNotFoundError as exc:  # pragma: no cover - CI installs it
        pytest.skip(str(exc))
    retriever = BM25Retriever.from_files(
        [ROOT / "examples/data/searchain_demo.jsonl", ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl"], k=1
    )
    graph = create_searchain_graph(llm, retriever, BundledReader(), max_rounds=3, checkpointer=InMemorySaver())
    with TestClient(create_app(graph), base_url="http://127.0.0.1") as client:
        reply = client.post("/runs", json={"question": "Where was the performer of Spirit If... born?"})
        assert reply.status_code == 202
        run = reply.json()
        events = read_events(client, run["events"])
        summary = client.get(f"/runs/{run['run_id']}").json()
    assert events[-1]["event"] == "done", events[-1]
    output = summary["output"]
    assert summary["status"] == "done" and output["answer"].strip()
    assert 1 <= output["rounds"] <= 3 and len(output["tree"]) == output["rounds"]
    final = events[-1]["data"]["html"]
    assert 'data-done="true"' in final and final.count('<section class="branch') == output["rounds"]
    assert any((e["data"].get("progress") or "").startswith("round 1: CoQ") for e in events)
    # The run's checkpoints are under its own thread id.
    state = graph.get_state({"configurable": {"thread_id": run["thread_id"]}}).values
    assert state["answer"] == output["answer"]
