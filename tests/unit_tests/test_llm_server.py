"""``openai:`` models against an OpenAI-compatible server: answers, log-probabilities, slow and down servers.

The server is :class:`tests.fake_openai.FakeOpenAIServer` (a rule-based LLM behind the
chat-completions API, run by uvicorn on 127.0.0.1); the client is the real ``ChatOpenAI`` that
``load_chat_model("openai:...")`` builds, so timeouts, retries and errors are the SDK's own. The
real server (``transformers serve`` with SmolLM2) is driven in
``tests/integration_tests/test_openai_server.py``.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

import pytest

pytest.importorskip("uvicorn")
pytest.importorskip("langchain_openai")

from searchain_graph import LLMReader, ReaderOutput, create_searchain_graph
from searchain_graph.evaluation.harness import read_records
from searchain_graph.ir.readers.base import Passage, logprob_confidence
from searchain_graph.llms.loading import load_chat_model
from searchain_graph.llms.servers import PLACEHOLDER_API_KEY, describe_llm_failure, is_transient
from tests.fake_openai import FakeOpenAIServer
from tests.fakes import PASSAGES, QUESTION, ScriptedReader, retriever, serve_llm, tree_llm
from tests.helpers import free_port, served

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

READS = {
    "performer": ReaderOutput("Kevin Drew", 4.0),
    "born": ReaderOutput("Toronto", 3.0),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 2.5),
}


@pytest.fixture(autouse=True)
def _no_openai_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_API_BASE", "SEARCHAIN_LLM_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SEARCHAIN_LLM_RETRIES", "0")  # each test sets what it measures


def _point_at(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", url.rstrip("/") + "/v1")


def test_a_served_llm_runs_the_graph_as_the_llm_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeOpenAIServer(tree_llm())
    direct = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(READS)).invoke({"question": QUESTION})
    with served(server.app()) as url:
        _point_at(monkeypatch, url)
        llm = load_chat_model("openai:fake-model", max_new_tokens=300)
        out = create_searchain_graph(llm, retriever(), ScriptedReader(READS)).invoke({"question": QUESTION})
    assert out["answer"] == direct["answer"] and out["rounds"] == direct["rounds"] == 3
    assert out["final_content"] == direct["final_content"]
    assert [r["answer"] for r in out["references"]] == [r["answer"] for r in direct["references"]]
    assert len(server.requests) == 4  # three CoQ rounds and the tracing call
    first = server.requests[0]
    assert first["model"] == "fake-model" and first["temperature"] == 0 and first["max_completion_tokens"] == 300
    assert llm.openai_api_key.get_secret_value() == PLACEHOLDER_API_KEY  # type: ignore[attr-defined]
    assert out["usage"]["llm_calls"] == 4 and out["usage"]["output_tokens"] > 0


def test_without_max_new_tokens_the_server_chooses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert load_chat_model("openai:m").max_tokens is None  # type: ignore[attr-defined]
    monkeypatch.setenv("SEARCHAIN_LLM_TIMEOUT", "soon")
    with pytest.raises(ValueError, match="SEARCHAIN_LLM_TIMEOUT must be a number"):
        load_chat_model("openai:m")
    with pytest.raises(ValueError, match="needs a model name"):
        load_chat_model("openai: ")


def test_503s_are_retried_with_backoff_and_the_run_goes_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHAIN_LLM_RETRIES", "2")
    server = FakeOpenAIServer(tree_llm(), failures=2)
    with served(server.app()) as url:
        _point_at(monkeypatch, url)
        started = time.perf_counter()
        out = create_searchain_graph(load_chat_model("openai:m"), retriever(), ScriptedReader(READS)).invoke(
            {"question": QUESTION}
        )
        seconds = time.perf_counter() - started
    assert out["answer"] == "Toronto Coach Terminal"
    assert len(server.requests) == 4 + 2  # the two 503s were tried again
    assert seconds > 0.5  # the SDK waited (0.5 s, then about 1 s, with jitter) before trying again


def test_a_server_that_keeps_failing_ends_in_a_clear_error_after_bounded_tries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHAIN_LLM_RETRIES", "1")
    server = FakeOpenAIServer(tree_llm(), failures=100)
    with served(server.app()) as url:
        _point_at(monkeypatch, url)
        llm = load_chat_model("openai:m")
        with pytest.raises(Exception) as caught:
            create_searchain_graph(llm, retriever(), ScriptedReader(READS)).invoke({"question": QUESTION})
    # 3 tries of the graph's step, each the SDK's 2 attempts; then an error naming the server.
    assert len(server.requests) == 3 * 2
    described = describe_llm_failure(caught.value, llm)
    assert described == f"the LLM server at {url}v1 answered HTTP 503: " + str(caught.value)
    assert "SearChain step 'coq_generation' failed in round 1" in "\n".join(caught.value.__notes__)


def test_a_refusal_is_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeOpenAIServer(tree_llm(), served_model="/models/smollm2")
    with served(server.app()) as url:
        _point_at(monkeypatch, url)
        llm = load_chat_model("openai:smollm2")
        with pytest.raises(Exception) as caught:
            create_searchain_graph(llm, retriever(), ScriptedReader(READS)).invoke({"question": QUESTION})
    assert len(server.requests) == 1 and not is_transient(caught.value)  # type: ignore[arg-type]
    assert "answered HTTP 400" in str(describe_llm_failure(caught.value, llm))
    assert "pinned to '/models/smollm2'" in str(caught.value)


def test_a_slow_server_times_out_and_is_described(monkeypatch: pytest.MonkeyPatch) -> None:
    server = FakeOpenAIServer(tree_llm(), delay=1.0)
    with served(server.app()) as url:
        _point_at(monkeypatch, url)
        llm = load_chat_model("openai:m", timeout=0.2)
        started = time.perf_counter()
        with pytest.raises(Exception) as caught:
            llm.invoke("hello")
        assert time.perf_counter() - started < 0.9  # the client gave up; it did not wait for the reply
    assert "did not answer in time" in str(describe_llm_failure(caught.value, llm))
    assert is_transient(caught.value)  # type: ignore[arg-type]


def test_the_reader_uses_served_logprobs_and_warns_once_without_them(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def respond(messages: object) -> str:
        return "Kevin Drew was born in Toronto."

    from tests.fakes import RuleChatModel

    passage = Passage(PASSAGES[1].page_content, title="Kevin Drew")
    with_logprobs = FakeOpenAIServer(RuleChatModel(respond=respond), token_logprob=-0.05)
    with served(with_logprobs.app()) as url:
        _point_at(monkeypatch, url)
        read = LLMReader(load_chat_model("openai:m")).read("Where was Kevin Drew born?", passage)
    assert with_logprobs.requests[0]["logprobs"] is True and with_logprobs.requests[0]["stop"] == ["\n"]
    assert read.answer == "Toronto" and read.confidence == pytest.approx(logprob_confidence([-0.05]), abs=1e-6)
    assert read.confidence > 1.5  # confident enough to correct the LLM

    without = FakeOpenAIServer(RuleChatModel(respond=respond))  # ignores `logprobs`, as transformers serve does
    with served(without.app()) as url, caplog.at_level(logging.WARNING):
        _point_at(monkeypatch, url)
        reader = LLMReader(load_chat_model("openai:m"))
        reads = reader.read_batch([("Where was Kevin Drew born?", passage)] * 3)
    assert [(r.answer, r.confidence) for r in reads] == [("Toronto", 0.0)] * 3
    warnings = [r.getMessage() for r in caplog.records if "log-probabilities" in r.getMessage()]
    assert len(warnings) == 1
    assert f"ChatOpenAI 'm' at {url}v1 returned no token log-probabilities" in warnings[0]
    assert "--reader bundled" in warnings[0]


def _dataset(path: Path, questions: int) -> Path:
    rows = [
        {
            "question_id": f"q{i}",
            "question_text": QUESTION,
            "answers_objects": [{"spans": ["Toronto Coach Terminal"]}],
            "contexts": [{"title": d.metadata["title"], "paragraph_text": d.page_content} for d in PASSAGES],
        }
        for i in range(questions)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_eval_against_a_down_server_fails_clearly_then_resumes_with_nothing_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from searchain_graph.cli import main

    port = free_port()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    data, out = _dataset(tmp_path / "hotpot.jsonl", 6), tmp_path / "served.jsonl"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "searchain,cot", "--out", str(out)]
    args += ["--model", "openai:m", "--reader", "llm", "--concurrency", "8", "--quiet"]
    assert main(args) == 1  # nothing listens on the port
    err = capsys.readouterr().err
    assert "every one of the 12 run(s) failed" in err
    errors = {r["error"] for r in read_records(out)}
    # The error says where, and why, in every record (the SDK's own message is "Connection error.").
    assert len(errors) == 1 and f"cannot reach the LLM server at http://127.0.0.1:{port}/v1 (" in errors.pop()

    server = FakeOpenAIServer(serve_llm())
    with served(server.app(), port=port):
        assert main(args) == 0
    assert "12 run(s), 0 already" in capsys.readouterr().out
    latest = {(r["qid"], r["method"]): r for r in read_records(out)}
    assert len(latest) == 12 and not any(r.get("error") for r in latest.values())
    # The served LLM answers as the same LLM in process.
    here = tmp_path / "in-process.jsonl"
    local = [a if a != "openai:m" else "import:tests.fakes:serve_llm" for a in args]
    assert main([*local[: local.index("--out") + 1], str(here), *local[local.index("--out") + 2 :]]) == 0
    expected = {(r["qid"], r["method"]): r["prediction"] for r in read_records(here)}
    assert {key: r["prediction"] for key, r in latest.items()} == expected
    assert main(args) == 0  # a third run has nothing left to do
    assert "0 run(s), 12 already" in capsys.readouterr().out


def test_ask_against_a_down_server_says_so(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from searchain_graph.cli import main

    port = free_port()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{port}/v1")
    corpus = Path(__file__).resolve().parents[2] / "examples/data/searchain_demo.jsonl"
    code = main(["ask", QUESTION, "--corpus", str(corpus), "--model", "openai:m", "--reader", "llm", "--quiet"])
    assert code == 1
    assert f"searchain: error: cannot reach the LLM server at http://127.0.0.1:{port}/v1" in capsys.readouterr().err


def test_model_dir_prints_a_local_model_directory(tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from searchain_graph.cli import main

    assert main(["model-dir", "--model", str(tiny_llm_dir)]) == 0
    assert capsys.readouterr().out.strip() == str(tiny_llm_dir)
    assert main(["model-dir", "--model", str(tiny_llm_dir / "absent.gguf")]) == 2
    assert "GGUF file not found" in capsys.readouterr().err
    assert main(["model-dir", "--model", "openai:gpt-4o-mini"]) == 2
    assert "not a local model" in capsys.readouterr().err
