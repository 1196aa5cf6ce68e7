"""A person in the loop: ``review=True`` pauses before IR overrules the LLM.

:func:`tests.fakes.tree_llm`'s round 1 says Kevin Drew was born in Montreal; the reader finds
Toronto with f = 3.0 > θ = 1.5, a correction. Under review it is an ``interrupt()`` whose payload
is the node, both answers, f against θ and the passage; ``Command(resume=...)`` accepts, rejects
or edits it, and the tree records who decided.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import Field

from searchain_graph import create_searchain_graph
from searchain_graph.method.review import MAX_REVIEW_ANSWER_CHARS, StaleDecisionError, review_decision
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tracing_reply, tree_llm


def _graph(llm: Any = None) -> Any:
    return create_searchain_graph(
        llm or tree_llm(),
        retriever(),
        ScriptedReader(TREE_READS),
        confidence_threshold=1.5,
        checkpointer=InMemorySaver(),
        review=True,
        tracing="pairs",  # the answer is the path's, as each decision left it
    )


def _paused(graph: Any, thread: str) -> tuple[dict[str, Any], dict[str, Any]]:
    config = {"configurable": {"thread_id": thread}}
    out = graph.invoke({"question": QUESTION}, config)
    (pause,) = out["__interrupt__"]
    return config, pause.value


def test_a_correction_pauses_with_what_a_reviewer_needs() -> None:
    _, payload = _paused(_graph(), "t-payload")
    assert payload["kind"] == "correction" and payload["round"] == 1 and payload["node"] == 2
    assert payload["query"] == "Where was Kevin Drew born?"
    assert payload["llm_answer"] == "Montreal." and payload["g"] == "Toronto"
    assert payload["f"] == pytest.approx(3.0) and payload["theta"] == pytest.approx(1.5)
    assert "Toronto" in payload["passage"]["text"] and payload["passage"]["title"]
    assert payload["decisions"] == ["accept", "reject", "edit"]


def test_accepted_the_run_goes_on_as_without_review_and_the_tree_says_a_person_decided() -> None:
    graph = _graph()
    config, _ = _paused(graph, "t-accept")
    out = graph.invoke(Command(resume="accept"), config)
    while "__interrupt__" in out:  # round 2 holds no correction; any later one is accepted too
        out = graph.invoke(Command(resume="accept"), config)
    plain = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)
    assert out["answer"] == plain.invoke({"question": QUESTION})["answer"] == "Toronto Coach Terminal"
    check = out["tree"][0]["checks"][1]
    assert check["action"] == "correction" and check["decided_by"] == "ir+person"
    assert check["review"] == {"decision": "accept"}


def test_rejected_the_llms_answer_stands_and_the_traversal_goes_on() -> None:
    graph = _graph()
    config, _ = _paused(graph, "t-reject")
    out = graph.invoke(Command(resume="reject"), config)
    # Node 3 is reached in the same round (after a correction it would not be), and is a correction too.
    (pause,) = out["__interrupt__"]
    assert pause.value["node"] == 3 and pause.value["g"] == "Toronto Coach Terminal"
    out = graph.invoke(Command(resume="reject"), config)
    first = out["tree"][0]
    assert [c["action"] for c in first["checks"]] == ["pass", "pass", "pass"]
    assert [c.get("review") for c in first["checks"]] == [None, {"decision": "reject"}, {"decision": "reject"}]
    assert "a person rejected IR's correction" in first["checks"][1]["reason"]
    assert out["references"][1]["answer"] == "Montreal." and out["references"][1]["source"] == "llm"
    assert out["rounds"] == 1  # nothing was sent back


def test_edited_the_persons_answer_is_what_the_llm_is_told() -> None:
    llm = tree_llm()
    graph = _graph(llm)
    config, _ = _paused(graph, "t-edit")
    out = graph.invoke(Command(resume={"decision": "edit", "answer": "Toronto, Ontario"}), config)
    while "__interrupt__" in out:
        out = graph.invoke(Command(resume="accept"), config)
    check = out["tree"][0]["checks"][1]
    assert check["review"] == {"decision": "edit", "answer": "Toronto, Ontario"}
    assert any("should be Toronto, Ontario" in str(m.content) for call in llm.calls for m in call)
    assert out["references"][1]["answer"] == "Toronto, Ontario"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("maybe", "must be one of accept, reject, edit, got 'maybe'"),
        (42, "got int"),
        ({"decision": "edit"}, "needs the answer"),
        ({"decision": "edit", "answer": "   "}, "needs the answer"),
        ({"decision": "edit", "answer": "x" * (MAX_REVIEW_ANSWER_CHARS + 1)}, "at most"),
        ([["accept"]], "got list"),
    ],
)
def test_a_bad_decision_is_refused_by_name(value: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        review_decision(value)


@pytest.mark.parametrize("checkpointer", [False, None])
def test_review_needs_a_checkpointer(checkpointer: Any) -> None:
    """Without one, the run would end with an empty answer and a pause nobody can resume."""
    with pytest.raises(ValueError, match="needs a checkpointer"):
        create_searchain_graph(
            tree_llm(), retriever(), ScriptedReader(TREE_READS), review=True, checkpointer=checkpointer
        )


class CountingRetriever(BaseRetriever):
    """BM25 over the fake passages, counting queries; ``moved`` makes it answer from another passage."""

    inner: Any
    queries: list[str] = Field(default_factory=list)
    moved: bool = False

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        self.queries.append(query)
        if self.moved:  # a live index changed under the run
            return [Document(page_content="Kevin Drew was born in Halifax.", metadata={"title": "Moved"})]
        return list(self.inner.invoke(query))


def _counted(review: bool) -> tuple[Any, CountingRetriever, ScriptedReader]:
    ir = CountingRetriever(inner=retriever())
    reader = ScriptedReader(TREE_READS)
    graph = create_searchain_graph(
        tree_llm(), ir, reader, confidence_threshold=1.5, checkpointer=InMemorySaver(), review=review
    )
    return graph, ir, reader


def _reads(reader: ScriptedReader) -> int:
    return sum(len(b) for b in reader.batches) + len(reader.singles)


def test_deciding_redoes_no_retrieval_and_no_reading() -> None:
    """Accepting every correction costs what the run costs without review: the pause is a node of its own."""
    plain, plain_ir, plain_reader = _counted(review=False)
    plain_out = plain.invoke({"question": QUESTION}, {"configurable": {"thread_id": "plain"}})
    graph, ir, reader = _counted(review=True)
    config = {"configurable": {"thread_id": "counted"}}
    out = graph.invoke({"question": QUESTION}, config)
    while "__interrupt__" in out:
        out = graph.invoke(Command(resume="accept"), config)
    assert out["answer"] == plain_out["answer"]
    assert ir.queries == plain_ir.queries and _reads(reader) == _reads(plain_reader)
    assert out["usage"]["retrieval_calls"] == plain_out["usage"]["retrieval_calls"] > 0
    assert out["usage"]["reader_calls"] == plain_out["usage"]["reader_calls"] > 0


def test_a_decision_applies_to_the_passage_the_reviewer_saw() -> None:
    graph, ir, _ = _counted(review=True)
    config = {"configurable": {"thread_id": "live"}}
    (pause,) = graph.invoke({"question": QUESTION}, config)["__interrupt__"]
    ir.moved = True  # the index changes while the person reads
    out = graph.invoke(Command(resume="accept"), config)
    check = next(c for c in out["tree"][0]["checks"] if c["node"] == pause.value["node"])
    assert check["reader_answer"] == pause.value["g"] == "Toronto"
    assert check["passage"]["title"] == pause.value["passage"]["title"] != "Moved"


def test_a_decision_naming_another_correction_is_refused_and_not_recorded() -> None:
    graph = _graph()
    config, payload = _paused(graph, "t-named")
    assert payload["id"] == "round-1-node-2"
    stale = "answers round-1-node-3, but the run waits for a decision on round-1-node-2"
    with pytest.raises(StaleDecisionError, match=stale):
        graph.invoke(Command(resume={"decision": "accept", "round": 1, "node": 3}), config)
    out = graph.invoke(Command(resume={"decision": "reject", "id": payload["id"]}), config)
    (pause,) = out["__interrupt__"]
    assert pause.value["id"] == "round-1-node-3"
    # The same decision sent again (a retry) names node 2: it must not land on node 3, which nobody saw.
    with pytest.raises(StaleDecisionError):
        graph.invoke(Command(resume={"decision": "reject", "id": payload["id"]}), config)
    out = graph.invoke(Command(resume={"decision": "reject", "round": 1, "node": 3}), config)
    assert [c.get("review") for c in out["tree"][0]["checks"]] == [None, {"decision": "reject"}, {"decision": "reject"}]


def test_a_decision_on_a_run_that_waits_for_none_is_refused() -> None:
    graph = _graph()
    config = {"configurable": {"thread_id": "t-none"}}
    with pytest.raises(StaleDecisionError, match="not waiting for a review decision"):
        graph.invoke(Command(resume="accept"), config)


@pytest.mark.parametrize(
    ("value", "message"), [("acept", "must be one of accept, reject, edit, got 'acept'"), (None, "got NoneType")]
)
def test_a_malformed_decision_leaves_the_correction_answerable(value: Any, message: str) -> None:
    graph = _graph()
    config, _ = _paused(graph, "t-typo")
    with pytest.raises(ValueError, match=message):
        graph.invoke(Command(resume=value), config)
    out = graph.invoke(Command(resume="accept"), config)
    while "__interrupt__" in out:
        out = graph.invoke(Command(resume="accept"), config)
    assert out["answer"] == "Toronto Coach Terminal"
    assert out["tree"][0]["checks"][1]["review"] == {"decision": "accept"}


def test_a_malformed_decision_that_reaches_the_node_is_asked_again() -> None:
    """Where nothing checked the value first (a parent graph resuming), the node asks again."""
    graph = _graph()
    graph.check_resume = None
    config, payload = _paused(graph, "t-again")
    (pause,) = graph.invoke(Command(resume="acept"), config)["__interrupt__"]
    assert pause.value["id"] == payload["id"] and "got 'acept'" in pause.value["refused"]
    (pause,) = graph.invoke(Command(resume="reject"), config)["__interrupt__"]
    assert pause.value["id"] == "round-1-node-3" and "refused" not in pause.value
    out = graph.invoke(Command(resume="reject"), config)
    assert [c.get("review") for c in out["tree"][0]["checks"]] == [None, {"decision": "reject"}, {"decision": "reject"}]


def _events_until(client: Any, url: str, stop: str, after: int | None = None) -> list[dict[str, Any]]:
    """The run's events up to and including the first ``stop`` event (the stream stays open past a review)."""
    import json

    headers = {"Last-Event-ID": str(after)} if after is not None else {}
    events: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", url, headers=headers) as reply:
        for line in reply.iter_lines():
            if line.startswith(":"):
                continue
            if line:
                field, _, value = line.partition(": ")
                current[field] = json.loads(value) if field == "data" else value
                continue
            if current:
                events.append(current)
                if current["event"] in (stop, "done", "failed"):
                    return events
            current = {}
    return events


def test_the_server_pauses_a_run_for_review_and_goes_on_with_the_decision(tmp_path: Any) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from searchain_graph.serve import create_app

    app = create_app(_graph(), about="review", db=tmp_path / "serve.db")
    with TestClient(app, base_url="http://127.0.0.1") as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        events = _events_until(client, run["events"], "review")
        assert events[-1]["event"] == "review" and events[-1]["data"]["review"]["node"] == 2
        summary = client.get(f"/runs/{run['run_id']}").json()
        assert summary["status"] == "review" and summary["review"]["g"] == "Toronto"
        decide = f"/runs/{run['run_id']}/review"
        bad = client.post(decide, json={"decision": "maybe", "id": "round-1-node-2"})
        assert bad.status_code == 400 and "must be one of accept, reject, edit" in bad.json()["error"]
        unnamed = client.post(decide, json="reject")
        assert unnamed.status_code == 400 and "names the correction it answers" in unnamed.json()["error"]
        first = {"decision": "reject", "id": "round-1-node-2"}
        assert client.post(decide, json=first).status_code == 202
        events = _events_until(client, run["events"], "review", after=int(events[-1]["id"]))
        assert events[-1]["event"] == "review" and events[-1]["data"]["review"]["node"] == 3
        retried = client.post(decide, json=first)  # the same decision again: not for node 3
        assert retried.status_code == 409 and "waits for a decision on round-1-node-3" in retried.json()["error"]
        assert client.post(decide, json={"decision": "reject", "round": 1, "node": 3}).status_code == 202
        events = _events_until(client, run["events"], "done", after=int(events[-1]["id"]))
        assert events[-1]["event"] == "done" and events[-1]["data"]["answer"] == "Gare d'autocars de Montreal"
        late = client.post(decide, json={"decision": "accept", "id": "round-1-node-3"})
        assert late.status_code == 409 and "not waiting for a review" in late.json()["error"]
        checks = client.get(f"/runs/{run['run_id']}").json()["output"]["tree"][0]["checks"]
        assert [c.get("decided_by") for c in checks] == [None, "ir+person", "ir+person"]


def test_a_run_waiting_for_review_still_waits_after_a_restart(tmp_path: Any) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from searchain_graph.serve import create_app

    db = tmp_path / "serve.db"
    with TestClient(create_app(_graph(), db=db), base_url="http://127.0.0.1") as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        assert _events_until(client, run["events"], "review")[-1]["event"] == "review"
    with TestClient(create_app(_graph(), db=db), base_url="http://127.0.0.1") as client:
        summary = client.get(f"/runs/{run['run_id']}").json()
        assert summary["status"] == "review" and summary["review"]["node"] == 2
        seen = _events_until(client, run["events"], "review")  # the stored events, up to the pause
        accept = {"decision": "accept", "id": summary["review"]["id"]}
        assert client.post(f"/runs/{run['run_id']}/review", json=accept).status_code == 202
        for _ in range(5):  # later rounds may pause again: accept each
            events = _events_until(client, run["events"], "review", after=int(seen[-1]["id"]))
            seen += events
            if events[-1]["event"] != "review":
                break
            accept = {"decision": "accept", "id": events[-1]["data"]["review"]["id"]}
            client.post(f"/runs/{run['run_id']}/review", json=accept)
        assert events[-1]["event"] == "done" and events[-1]["data"]["answer"] == "Toronto Coach Terminal"


def test_under_review_each_verdict_is_streamed_once() -> None:
    """The IR check runs again after each decision; the verdicts streamed before it are not sent again."""
    plain = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)
    streamed = plain.stream({"question": QUESTION}, stream_mode="custom")
    expected = [(e["round"], e["node"], e["action"]) for e in streamed]
    graph = _graph()
    config = {"configurable": {"thread_id": "t-stream"}}
    events = list(graph.stream({"question": QUESTION}, config, stream_mode="custom"))
    while graph.get_state(config).interrupts:
        events += graph.stream(Command(resume="accept"), config, stream_mode="custom")
    assert [(e["round"], e["node"], e["action"]) for e in events] == expected


def test_each_verdict_is_a_custom_stream_event() -> None:
    """``stream_mode="custom"``: one event per IR verdict, so a client follows the tree without state dumps."""
    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)
    events = list(graph.stream({"question": QUESTION}, stream_mode="custom"))
    assert [(e["round"], e["node"], e["action"]) for e in events] == [
        (1, 1, "pass"),
        (1, 2, "correction"),
        (2, 2, "completion"),
    ]
    assert all(e["searchain"] == "verdict" and e["threshold"] == pytest.approx(1.5) for e in events)
    assert events[1]["reader_answer"] == "Toronto" and events[1]["confidence"] == pytest.approx(3.0)


def test_a_decision_on_a_server_restarted_without_review_is_refused_and_the_run_still_waits(tmp_path: Any) -> None:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from searchain_graph.serve import create_app

    db = tmp_path / "serve.db"
    with TestClient(create_app(_graph(), db=db), base_url="http://127.0.0.1") as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        paused = _events_until(client, run["events"], "review")[-1]
        assert paused["event"] == "review"
    plain = create_searchain_graph(
        tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5, checkpointer=InMemorySaver()
    )
    with TestClient(create_app(plain, db=db), base_url="http://127.0.0.1") as client:
        accept = {"decision": "accept", "id": paused["data"]["review"]["id"]}
        refused = client.post(f"/runs/{run['run_id']}/review", json=accept)
        assert refused.status_code == 409 and "start the server with --review" in refused.json()["error"]
        assert client.get(f"/runs/{run['run_id']}").json()["status"] == "review"  # nothing lost: it still waits
    with TestClient(create_app(_graph(), db=db), base_url="http://127.0.0.1") as client:
        assert client.post(f"/runs/{run['run_id']}/review", json=accept).status_code == 202


def test_two_corrections_of_one_round_each_pause_under_check_on() -> None:
    chain = (
        "[Query 1]: Where was Kevin Drew born?\n[Answer 1]: Montreal.\n"
        "[Query 2]: Who is the performer of Spirit If...?\n[Answer 2]: Feist.\n"
        "[Final Content]: Feist [2] was born in Montreal [1]."
    )

    def respond(messages: list[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        return traced if traced is not None else chain

    graph = create_searchain_graph(
        RuleChatModel(respond=respond),
        retriever(),
        ScriptedReader(TREE_READS),
        confidence_threshold=1.5,
        checkpointer=InMemorySaver(),
        review=True,
        tracing="pairs",
        check_on=True,
        close_early=True,
    )
    config, first = _paused(graph, "t-check-on")
    assert (first["round"], first["node"]) == (1, 1)
    out = graph.invoke(Command(resume="accept"), config)
    (second,) = out["__interrupt__"]  # node 2 does not build on Montreal: IR checked on, in round 1
    assert (second.value["round"], second.value["node"]) == (1, 2) and second.value["g"] == "Kevin Drew"
    out = graph.invoke(Command(resume="accept"), config)
    assert "__interrupt__" not in out and out["rounds"] == 1
    assert [c["decided_by"] for c in out["tree"][0]["checks"]] == ["ir+person", "ir+person"]
    assert [r["answer"] for r in out["references"]] == ["Toronto", "Kevin Drew"]
