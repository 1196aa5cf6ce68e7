"""The graph state's reducers, and nodes that return only what they add."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Overwrite

from searchain_graph.method.nodes import FRESH_RUN
from searchain_graph.method.state import SearChainState, add_usage, empty_usage, merge_branches
from searchain_graph.method.steps import reducers_of
from tests.fakes import QUESTION, ScriptedReader
from tests.unit_tests.test_graph import CONFIDENT, build, correcting_llm


def branch(rnd: int, **fields: Any) -> dict[str, Any]:
    return {"round": rnd, "parent": None, "nodes": [], "final_content": None, "raw": "", "checks": [], **fields}


def test_merge_branches_appends_new_rounds_and_updates_known_ones() -> None:
    tree = merge_branches([], [branch(1, raw="first")])
    tree = merge_branches(tree, [{"round": 1, "checks": [{"node": 1, "action": "pass"}]}])
    tree = merge_branches(tree, [branch(2, raw="second")])
    assert [(b["round"], b["raw"]) for b in tree] == [(1, "first"), (2, "second")]
    assert tree[0]["checks"] == [{"node": 1, "action": "pass"}]
    assert tree[1]["checks"] == []


def test_add_usage_adds_field_by_field_from_partial_counts() -> None:
    total = add_usage(None, {"llm_calls": 1, "words_in": 10})
    total = add_usage(total, {"retrieval_calls": 3, "reader_calls": 2})
    total = add_usage(total, {"llm_calls": 1, "words_out": 4})
    assert total == {
        **empty_usage(),
        "llm_calls": 2,
        "words_in": 10,
        "words_out": 4,
        "retrieval_calls": 3,
        "reader_calls": 2,
    }


def test_a_new_run_resets_every_channel_with_a_reducer() -> None:
    reduced = reducers_of(SearChainState)
    assert {"messages", "tree", "warnings", "references", "processed", "usage", "ir_cache"} <= set(reduced)
    assert set(reduced) <= set(FRESH_RUN)


def test_the_driver_finds_the_reducers_the_graph_uses() -> None:
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT))
    for name in reducers_of(SearChainState):
        assert type(graph.channels[name]).__name__ == "BinaryOperatorAggregate", name


def test_each_node_returns_only_what_it_adds() -> None:
    graph = build(correcting_llm(), ScriptedReader(CONFIDENT))
    updates = [next(iter(chunk.items())) for chunk in graph.stream({"question": QUESTION}, stream_mode="updates")]
    (_, first), (_, check1), (_, fb), (_, second), (_, check2), (_, traced) = updates
    # Round 1 starts the run: the accumulated channels are replaced, not added to.
    assert isinstance(first["tree"], Overwrite) and isinstance(first["references"], Overwrite)
    # Round 1's IR check: node 1 passes, node 2 is corrected; it returns those two references only.
    assert [r["index"] for r in check1["references"]] == [1, 2]
    assert check1["tree"] == [{"round": 1, "checks": check1["tree"][0]["checks"]}]
    assert {k: v for k, v in check1["usage"].items() if v} == {"retrieval_calls": 3, "reader_calls": 3}
    assert [m["role"] for m in fb["messages"]] == ["user"]
    # Round 2 adds a branch and one LLM call; its IR check adds reference 3 only.
    assert [b["round"] for b in second["tree"]] == [2] and second["usage"]["llm_calls"] == 1
    assert [m["role"] for m in second["messages"]] == ["assistant"]
    assert [r["index"] for r in check2["references"]] == [3]
    assert "references" not in traced and traced["usage"]["llm_calls"] == 1


def test_the_reducers_rebuild_the_whole_run() -> None:
    # The paper's layout: one user message opens the conversation.
    graph = build(
        correcting_llm(), ScriptedReader(CONFIDENT), checkpointer=InMemorySaver(), demonstrations="instruction"
    )
    config = {"configurable": {"thread_id": "reducers"}}
    out = graph.invoke({"question": QUESTION}, config)
    state = graph.get_state(config).values
    assert [b["round"] for b in out["tree"]] == [1, 2]
    assert [c["node"] for c in out["tree"][0]["checks"]] == [1, 2, 3]
    assert [r["index"] for r in out["references"]] == [1, 2, 3]
    assert state["processed"] == [r["query"] for r in out["references"]]
    assert [m["role"] for m in state["messages"]] == ["user", "assistant", "user", "assistant"]
    # Round 1 retrieves its chain's three queries; round 2 only its new third one (Toronto, not Montreal).
    assert out["usage"]["llm_calls"] == 3 and out["usage"]["retrieval_calls"] == 4
    # A second question on the thread: nothing of the first run is carried over.
    again = graph.invoke({"question": QUESTION + " Again?"}, config)
    state = graph.get_state(config).values
    calls = ("llm_calls", "retrieval_calls", "reader_calls")
    assert [again["usage"][c] for c in calls] == [out["usage"][c] for c in calls]
    assert [b["round"] for b in again["tree"]] == [1, 2]
    assert len(state["messages"]) == 4 and len(state["processed"]) == 3
