"""A real OpenAI-compatible server: ``transformers serve`` with SmolLM2-135M on 127.0.0.1.

The harness and the graph reach vLLM, Ollama or llama.cpp through ``OPENAI_BASE_URL``; this test
drives a real server of that kind, installed from the registries and loading local weights
(``searchain model-dir`` dequantises the shipped GGUF once). In one sequence, as a user meets it:

1. ``searchain eval --concurrency 8`` (CoT: one call a question) while the server is down: every
   run fails with an error naming the server, the command exits 1, nothing is half-written;
2. the server starts; what ``LLMReader`` gets for log-probabilities is checked (none: the
   server ignores the field), with the reader's one warning and its fallback *f*;
3. ``searchain ask`` answers through the server (SearChain: its rounds, its tracing);
4. the same ``searchain eval`` resumes (one request at a time): every question is run, none lost
   or duplicated.

Slow servers, timeouts and retries are exercised against a fake server in
``tests/unit_tests/test_llm_server.py``, where they can be timed.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="transformers serve needs transformers[serving] (the test group has it)")

from searchain_graph import LLMReader
from searchain_graph.evaluation.harness import read_records
from searchain_graph.ir.readers.base import Passage
from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.loading import load_chat_model
from searchain_graph.llms.weights import plain_weights_dir
from tests.helpers import free_port

pytestmark = [pytest.mark.integration, pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = ROOT / "examples/data/hotpotqa_dev20_questions.jsonl"
N_EVAL = int(os.environ.get("SEARCHAIN_SERVER_QUESTIONS", "3"))
"""Questions evaluated through the server (3: each phase's claim is about every question, not how many).
The evaluation runs CoT: SearChain through the server is ``ask``'s, and SearChain's 3 questions at
``--concurrency 8`` took most of CI's 30 minutes on a CPU-only ``transformers serve``."""
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def model_dir() -> str:
    try:
        smollm2 = TransformersChatModel.from_smollm2()
    except FileNotFoundError as exc:  # pragma: no cover - CI installs it
        pytest.skip(str(exc))
    return str(plain_weights_dir(smollm2.model_path, smollm2.gguf_file))


@pytest.fixture
def server_env(model_dir: str, tmp_path: Path) -> dict[str, str]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env |= {"OPENAI_BASE_URL": f"http://127.0.0.1:{port}/v1", "SEARCHAIN_PORT": str(port)}
    env |= {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hf"), "SEARCHAIN_LLM_RETRIES": "1"}
    (tmp_path / "hf").mkdir()
    return env


@pytest.fixture
def start_server(model_dir: str, server_env: dict[str, str], tmp_path: Path) -> Iterator[object]:
    """A function that starts ``transformers serve`` on the env's port and waits until it answers."""
    procs: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        log = (tmp_path / "server.log").open("wb")
        cmd = [str(BIN / "transformers"), "serve", model_dir, "--host", "127.0.0.1"]
        cmd += ["--port", server_env["SEARCHAIN_PORT"], "--device", "cpu", "--continuous-batching"]
        procs.append(subprocess.Popen(cmd, env=server_env, stdout=log, stderr=log, start_new_session=True))
        import httpx

        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            assert procs[-1].poll() is None, (tmp_path / "server.log").read_text(errors="replace")[-3000:]
            try:
                if httpx.get(f"http://127.0.0.1:{server_env['SEARCHAIN_PORT']}/health", timeout=2).is_success:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.5)
        raise AssertionError("transformers serve did not start in 300 s")

    yield start
    for proc in procs:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)


def _searchain(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "searchain"), *args], env=env, capture_output=True, text=True, timeout=1200, check=False
    )


def test_ask_and_eval_through_transformers_serve(
    model_dir: str,
    server_env: dict[str, str],
    start_server: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    out = tmp_path / "served.jsonl"
    evaluate = ["eval", "--dataset", "hotpotqa", "--data", str(QUESTIONS), "--limit", str(N_EVAL)]
    evaluate += ["--methods", "cot", "--model", f"openai:{model_dir}"]
    evaluate += ["--max-new-tokens", "64", "--out", str(out), "--quiet"]

    # 1. The server is down: every run fails, saying where, and the command exits 1.
    down = _searchain([*evaluate, "--concurrency", "8"], server_env)
    assert down.returncode == 1, down.stderr
    assert f"every one of the {N_EVAL} run(s) failed" in down.stderr
    errors = [r["error"] for r in read_records(out)]
    assert len(errors) == N_EVAL
    assert all(f"cannot reach the LLM server at {server_env['OPENAI_BASE_URL']}" in e for e in errors), errors[0]

    # 2. The server is up. What does the reader get for log-probabilities? Nothing: a warning, f = 0.
    start_server()  # type: ignore[operator]
    monkeypatch.setenv("OPENAI_BASE_URL", server_env["OPENAI_BASE_URL"])
    monkeypatch.setenv("OPENAI_API_KEY", "unused")
    llm = load_chat_model(f"openai:{model_dir}", max_new_tokens=32)
    reply = llm.bind(logprobs=True).invoke("Name the capital of France in one word.")
    assert reply.text.strip() and not reply.response_metadata.get("logprobs")
    passage = Passage("Kevin Drew (born 9 September 1976 in Toronto) is a Canadian musician.", title="Kevin Drew")
    with caplog.at_level(logging.WARNING):
        read = LLMReader(llm).read("Where was Kevin Drew born?", passage)
    assert read.answer == "Toronto" and read.confidence == 0.0  # the documented fallback f
    assert any("returned no token log-probabilities" in r.getMessage() for r in caplog.records)

    # 3. `searchain ask` through the server.
    corpus = ["--corpus", str(ROOT / "examples/data/searchain_demo.jsonl")]
    ask = ["ask", "Where was the performer of Spirit If... born?", *corpus, "--model", f"openai:{model_dir}"]
    asked = _searchain([*ask, "--max-new-tokens", "96", "--max-rounds", "2", "--json", "--quiet"], server_env)
    assert asked.returncode == 0, asked.stderr
    result = json.loads(asked.stdout)
    assert result["answer"].strip() and 1 <= result["rounds"] <= 2 and result["usage"]["llm_calls"] >= 2

    # 4. The evaluation resumes: every question runs once more, nothing lost or duplicated.
    # One request at a time: the server's continuous batching of concurrent long prompts is slow on a CPU.
    up = _searchain([*evaluate, "--concurrency", "1"], server_env)
    assert up.returncode == 0, up.stderr
    assert f"{N_EVAL} run(s), 0 already" in up.stdout
    records = read_records(out)
    latest = {r["qid"]: r for r in records if not r.get("error")}
    assert len(records) == 2 * N_EVAL and len(latest) == N_EVAL
    assert all(r["concurrency"] == 1 and r["model"] == model_dir for r in latest.values())
    assert all(r["usage"]["llm_calls"] >= 1 for r in latest.values())
