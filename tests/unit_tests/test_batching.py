"""Continuous batching (``max_batch_size`` > 1) against sequential decoding, on a tiny Llama."""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage

from searchain_graph.llms.batching import BatchEngine, GenerationRequest
from searchain_graph.llms.chat_model import TransformersChatModel

# Prompts of very different lengths, so rows join a batch left-padded and leave it early.
PROMPTS = [
    "hello",
    "Where was the performer of Spirit If... born? " * 6,
    "Query",
    "Construct a global reasoning chain for this complex question. " * 12,
    "Kevin Drew",
    "Passage Question unanswerable " * 3,
]
CALLS: list[dict[str, Any]] = [
    {"max_new_tokens": 24},
    {"max_new_tokens": 5},
    {"max_new_tokens": 40, "stop": ["an"]},
    {"max_new_tokens": 16},
    {"max_new_tokens": 30, "stop": ["Qu", "]"]},
    {"max_new_tokens": 1},
]


def _run(llm: TransformersChatModel, workers: int) -> list[AIMessage]:
    def one(i: int) -> AIMessage:
        kwargs = dict(CALLS[i])
        stop = kwargs.pop("stop", None)
        reply = llm.invoke(PROMPTS[i], stop=stop, **kwargs)
        assert isinstance(reply, AIMessage)
        return reply

    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, range(len(PROMPTS))))


def test_batched_replies_match_sequential_ones(tiny_llm_dir: Path) -> None:
    sequential = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=32, logprobs=True)
    batched = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=32, logprobs=True, max_batch_size=4)
    expected = _run(sequential, workers=1)
    got = _run(batched, workers=len(PROMPTS))
    engine = batched._engine
    assert isinstance(engine, BatchEngine)
    assert engine.rows > engine.steps  # several rows really decoded together
    for want, have in zip(expected, got, strict=True):
        assert have.text == want.text
        assert have.usage_metadata == want.usage_metadata
        assert have.response_metadata["finish_reason"] == want.response_metadata["finish_reason"]
        w = want.response_metadata["logprobs"]["content"]
        h = have.response_metadata["logprobs"]["content"]
        assert [t["token"] for t in h] == [t["token"] for t in w]
        assert all(math.isclose(a["logprob"], b["logprob"], abs_tol=1e-4) for a, b in zip(h, w, strict=True))


def test_each_row_keeps_its_own_limits(tiny_llm_dir: Path) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=32, max_batch_size=8)
    replies = _run(llm, workers=len(PROMPTS))
    for reply, call in zip(replies, CALLS, strict=True):
        usage = reply.usage_metadata
        assert usage is not None
        assert 1 <= usage["output_tokens"] <= call["max_new_tokens"]
        for stop in call.get("stop", []):
            assert stop not in reply.text
    assert replies[5].usage_metadata is not None and replies[5].usage_metadata["output_tokens"] == 1


def test_a_bad_prompt_fails_alone_and_the_engine_keeps_serving(tiny_llm_dir: Path) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=8, max_batch_size=4).load()
    engine = BatchEngine(llm._model, llm._tokenizer, max_batch_size=4)
    with pytest.raises(IndexError):
        engine.submit(GenerationRequest(input_ids=[10**6], max_new_tokens=4))  # id outside the vocabulary

    def submit(ids: list[int]) -> GenerationRequest | BaseException:
        try:
            return engine.submit(GenerationRequest(input_ids=ids, max_new_tokens=20))
        except IndexError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=3) as pool:  # a bad prompt beside good ones in one batch
        results = list(pool.map(submit, [[5, 6, 7], [10**6, 5], [8, 9, 10, 11]]))
    assert isinstance(results[1], IndexError)
    for good in (results[0], results[2]):
        assert isinstance(good, GenerationRequest) and good.error is None and good.new_ids


def test_bad_settings_are_refused(tiny_llm_dir: Path) -> None:
    with pytest.raises(ValueError, match="max_batch_size"):
        BatchEngine(object(), object(), max_batch_size=0)
    with pytest.raises(ValueError):
        TransformersChatModel(model_path=str(tiny_llm_dir), max_batch_size=0)
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_batch_size=2)
    with pytest.raises(ValueError, match="max_new_tokens"):
        llm.invoke("hello", max_new_tokens=0)


def test_engine_thread_serves_many_callers_without_losing_any(tiny_llm_dir: Path) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=6, max_batch_size=3)
    seen: list[str] = []
    lock = threading.Lock()

    def call(i: int) -> None:
        text = llm.invoke(f"question {i}").text
        with lock:
            seen.append(text)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(call, range(20)))
    assert len(seen) == 20


def test_a_shared_prompt_prefix_is_prefilled_once(tiny_llm_dir: Path) -> None:
    demos = "Construct a global reasoning chain for this complex question. " * 8
    prompts = [demos + "Where was Kevin Drew born?", demos + "Query", demos + "Query"]
    sequential = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=10)
    batched = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=10, max_batch_size=4)
    expected = [sequential.invoke(p).text for p in prompts]
    got = [batched.invoke(p).text for p in prompts]
    assert got == expected
    engine = batched._engine
    assert isinstance(engine, BatchEngine)
    # the second prompt reuses the demonstrations; the third all but its last token
    assert engine.reused_tokens > engine.prompt_tokens / 2
    assert len(engine._prefixes) == 2  # the repeated prompt is stored once


def test_the_prefix_cache_stays_within_its_budget(tiny_llm_dir: Path) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=2).load()
    engine = BatchEngine(llm._model, llm._tokenizer, max_batch_size=2, prefix_cache_bytes=200_000)
    for i in range(12):
        engine.submit(GenerationRequest(input_ids=[(i * 7 + j) % 300 + 3 for j in range(40)], max_new_tokens=2))
    assert 0 < engine._prefix_bytes <= 200_000
    assert len(engine._prefixes) < 12


def test_identical_calls_are_answered_once(tiny_llm_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=6, response_cache=8, max_batch_size=2)
    calls: list[int] = []
    decode = TransformersChatModel._decode

    def counted(self: TransformersChatModel, *args: Any) -> Any:
        calls.append(1)
        return decode(self, *args)

    monkeypatch.setattr(TransformersChatModel, "_decode", counted)
    with ThreadPoolExecutor(max_workers=4) as pool:
        replies = list(pool.map(lambda _: llm.invoke("hello"), range(4)))
    assert len(calls) == 1
    assert len({r.text for r in replies}) == 1
    assert all(r.usage_metadata == replies[0].usage_metadata for r in replies)
    llm.invoke("hello", stop=["x"])  # other settings: another reply
    assert len(calls) == 2
