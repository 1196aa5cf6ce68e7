"""The ``searchain serve`` app (Starlette), in process: runs, their event streams, bad input, concurrency."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from langchain_core.messages import BaseMessage
from langgraph.checkpoint.memory import InMemorySaver
from starlette.testclient import TestClient

from searchain_graph import create_searchain_graph
from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.loading import load_chat_model
from searchain_graph.serve import create_app
from searchain_graph.serve.app import MAX_BODY_BYTES
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tracing_reply, tree_llm
from tests.helpers import read_events

LOCAL = "http://127.0.0.1"
"""The app answers only requests naming a loopback Host (TestClient's default is ``testserver``)."""


def make_app(llm: Any = None, **options: Any) -> tuple[Any, Any]:
    reader = ScriptedReader(TREE_READS)
    graph = create_searchain_graph(
        llm or tree_llm(), retriever(), reader, confidence_threshold=1.5, checkpointer=InMemorySaver()
    )
    return create_app(graph, about="fakes", **options), graph


@pytest.fixture
def client() -> Iterator[TestClient]:
    app, _ = make_app()
    with TestClient(app, base_url=LOCAL) as test_client:
        yield test_client


def ask(client: TestClient, question: str = QUESTION) -> dict[str, Any]:
    reply = client.post("/runs", json={"question": question})
    assert reply.status_code == 202, reply.text
    body: dict[str, Any] = reply.json()
    return body


def test_the_page_is_self_contained(client: TestClient) -> None:
    page = client.get("/").text
    assert '<form id="ask">' in page and '<input id="question"' in page and "new EventSource(" in page
    assert "http://" not in page and "https://" not in page and " src=" not in page
    assert client.get("/healthz").json() == {"ok": True, "title": "SearChain", "about": "fakes"}


def test_no_response_may_be_framed() -> None:
    app, _ = make_app(token="a-token-of-sixteen-chars")
    with TestClient(app, base_url=LOCAL) as client:
        auth = {"authorization": "Bearer a-token-of-sixteen-chars"}
        replies = [
            client.get("/", headers=auth),  # the page
            client.get("/healthz", headers=auth),
            client.get("/runs/nope", headers=auth),  # the app's 404
            client.get("/"),  # the guard's 401
            client.get("/", headers={**auth, "host": "evil.example"}),  # the guard's 421
        ]
    assert [r.status_code for r in replies] == [200, 200, 404, 401, 421]
    for reply in replies:
        assert reply.headers["x-frame-options"] == "DENY"
        assert reply.headers["content-security-policy"] == "frame-ancestors 'none'"


def test_frame_ancestors_joins_a_policy_already_set() -> None:
    from starlette.datastructures import MutableHeaders

    from searchain_graph.serve.guard import deny_framing

    headers = MutableHeaders({"content-security-policy": "default-src 'self';"})
    deny_framing(headers)
    assert headers["content-security-policy"] == "default-src 'self'; frame-ancestors 'none'"
    assert headers.getlist("content-security-policy") == ["default-src 'self'; frame-ancestors 'none'"]
    assert headers["x-frame-options"] == "DENY"


def test_a_run_streams_each_step_then_its_answer(client: TestClient) -> None:
    run = ask(client)
    events = read_events(client, run["events"])
    assert [e["id"] for e in events] == [str(i) for i in range(len(events))]
    assert {e["event"] for e in events[:-1]} == {"update", "verdict"} and events[-1]["event"] == "done"
    # One verdict event per IR verdict (duplicates and nodes not reached are no verdicts), from the
    # graph's custom stream: round 1 corrects node 2, round 2 completes its unsolved node.
    assert [e["data"]["verdict"] for e in events if e["event"] == "verdict"] == [
        "round 1, node 1: pass (f=4.00, θ=1.50)",
        "round 1, node 2: correction (f=3.00, θ=1.50)",
        "round 2, node 2: completion (f=2.50, θ=1.50)",
    ]
    progress = [e["data"].get("progress") for e in events]
    assert progress[:2] == ["queued", "started"]
    assert any(p and p.startswith("  feedback: correction") for p in progress)
    assert any(p and p.startswith("  feedback: completion") for p in progress)
    # The tree grows: a branch per round, drawn as the run goes, done at the end.
    rounds = [e["data"]["html"].count('<section class="branch') for e in events if "html" in e["data"]]
    assert rounds == sorted(rounds) and rounds[-1] == 3
    assert 'data-done="true"' in events[-1]["data"]["html"]
    assert events[-1]["data"]["answer"] == "Toronto Coach Terminal"
    summary = client.get(f"/runs/{run['run_id']}").json()
    assert summary["status"] == "done" and summary["output"]["answer"] == "Toronto Coach Terminal"
    assert summary["thread_id"] == run["thread_id"] and summary["events"] == len(events)
    assert len(summary["output"]["tree"]) == 3
    page = client.get(f"/runs/{run['run_id']}/tree").text
    assert page.startswith("<!DOCTYPE html>") and 'data-verdict="correction"' in page
    markdown = client.get(f"/runs/{run['run_id']}/tree?format=markdown")
    assert markdown.headers["content-type"].startswith("text/markdown") and "**completed** → round 3" in markdown.text


def test_last_event_id_resumes_after_it(client: TestClient) -> None:
    run = ask(client)
    everything = read_events(client, run["events"])
    resumed = read_events(client, run["events"], last_id=3)
    assert resumed == everything[4:]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"question": "   "}, 400, "question is empty"),
        ({"question": "x" * 2001}, 400, "the limit is 2000"),
        ({"question": 42}, 400, "question must be a string"),
        ({"query": "Where?"}, 400, '{"question": "..."}'),
        (["Where?"], 400, '{"question": "..."}'),
        ("not json", 400, "not JSON"),
        ({"question": "x" * (MAX_BODY_BYTES + 1)}, 413, "the limit is"),
    ],
)
def test_bad_input_is_refused_with_what_is_wrong(client: TestClient, body: Any, status: int, message: str) -> None:
    if isinstance(body, str):
        reply = client.post("/runs", content=body.encode())
    else:
        reply = client.post("/runs", json=body)
    assert reply.status_code == status
    assert message in reply.json()["error"]
    assert client.app.state.runs._runs == {}  # type: ignore[attr-defined]


def test_an_unknown_run_is_a_404(client: TestClient) -> None:
    for path in ("/runs/nope", "/runs/nope/events", "/runs/nope/tree"):
        reply = client.get(path)
        assert reply.status_code == 404 and reply.json() == {"error": "no such run"}


def echo_llm() -> RuleChatModel:
    """Answers each question with its own first word, so that two runs' outputs can be told apart."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        word = messages[-1].text.rsplit("[Question]:", 1)[-1].split()[0].strip('"')
        return f"[Query 1]: Which word starts it?\n[Answer 1]: {word}.\n[Final Content]: It is {word} [1]."

    return RuleChatModel(respond=respond)


def test_concurrent_questions_do_not_mix() -> None:
    app, graph = make_app(echo_llm(), max_concurrent=2)
    with TestClient(app, base_url=LOCAL) as client:
        runs = [ask(client, f"{word} is the answer to what question?") for word in ("Alpha", "Bravo", "Charlie")]
        finals = [read_events(client, r["events"])[-1]["data"] for r in runs]
        assert [f["answer"] for f in finals] == ["Alpha", "Bravo", "Charlie"]
        assert len({r["thread_id"] for r in runs}) == 3
        for run, word in zip(runs, ("Alpha", "Bravo", "Charlie"), strict=True):
            state = graph.get_state({"configurable": {"thread_id": run["thread_id"]}}).values
            assert state["question"].startswith(word) and state["answer"] == word


def test_a_failing_run_is_reported_and_the_server_goes_on() -> None:
    calls = {"n": 0}

    def respond(messages: Sequence[BaseMessage]) -> str:
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("the LLM endpoint is down")
        return tree_llm().respond(messages)  # type: ignore[no-any-return]

    app, _ = make_app(RuleChatModel(respond=respond))
    with TestClient(app, base_url=LOCAL) as client:
        failed = read_events(client, ask(client)["events"])
        assert failed[-1]["event"] == "failed"
        assert failed[-1]["data"] == {
            "status": "error",
            "error": "SearChain step 'coq_generation' failed in round 1: RuntimeError: the LLM endpoint is down",
        }
        assert read_events(client, ask(client)["events"])[-1]["event"] == "done"


def test_only_the_newest_finished_runs_are_kept_with_their_checkpoints() -> None:
    app, graph = make_app(echo_llm(), keep_runs=1)
    with TestClient(app, base_url=LOCAL) as client:
        first = ask(client, "Old is what?")
        read_events(client, first["events"])
        assert client.get(f"/runs/{first['run_id']}").json()["answer"] == "Old"
        assert graph.get_state({"configurable": {"thread_id": first["thread_id"]}}).values["answer"] == "Old"
        second = ask(client, "New is what?")
        read_events(client, second["events"])
        assert client.get(f"/runs/{first['run_id']}").status_code == 404
        assert client.get(f"/runs/{second['run_id']}").json()["answer"] == "New"
        assert graph.get_state({"configurable": {"thread_id": first["thread_id"]}}).values == {}


def test_import_model_spec_loads_a_chat_model_of_your_own() -> None:
    assert isinstance(load_chat_model("import:tests.fakes:serve_llm"), RuleChatModel)
    with pytest.raises(ModelNotFoundError, match="cannot import 'no_such_module'"):
        load_chat_model("import:no_such_module:llm")
    with pytest.raises(ModelNotFoundError, match="has no 'nothing'"):
        load_chat_model("import:tests.fakes:nothing")
    with pytest.raises(ValueError, match="not a LangChain chat model"):
        load_chat_model("import:tests.fakes:QUESTION")
    with pytest.raises(ValueError, match="wants <module>:<name>"):
        load_chat_model("import:tests.fakes")
