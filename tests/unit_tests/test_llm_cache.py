"""The LLM-call cache (``SQLiteLLMCache``, LangChain's ``BaseCache``): keys, hits, processes, damage."""

from __future__ import annotations

import logging
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from langchain_core.caches import InMemoryCache
from langchain_core.messages import AIMessage, BaseMessage

from searchain_graph import create_searchain_graph
from searchain_graph.llms.call_cache import SQLiteLLMCache, is_cache_hit
from searchain_graph.llms.chat_model import TransformersChatModel
from tests.fakes import QUESTION, RuleChatModel, ScriptedReader, retriever
from tests.unit_tests.test_graph import CONFIDENT, correcting_llm


def counting_llm(calls: list[str], cache: Any = None) -> RuleChatModel:
    def reply(messages: list[BaseMessage]) -> str:
        calls.append(str(messages[-1].content))
        return f"reply {len(calls)}"

    return RuleChatModel(respond=reply, cache=cache)


def test_a_hit_returns_the_stored_reply_and_says_so(tmp_path: Path) -> None:
    calls: list[str] = []
    llm = counting_llm(calls, SQLiteLLMCache(tmp_path / "calls.sqlite"))
    first = llm.invoke("Where was Kevin Drew born?")
    again = llm.invoke("Where was Kevin Drew born?")
    assert calls == ["Where was Kevin Drew born?"]  # the model ran once
    assert again.content == first.content == "reply 1"
    assert not is_cache_hit(first) and is_cache_hit(again)
    # A new cache object on the same file (a later run) finds it too.
    later = counting_llm(calls, SQLiteLLMCache(tmp_path / "calls.sqlite")).invoke("Where was Kevin Drew born?")
    assert later.content == "reply 1" and is_cache_hit(later) and len(calls) == 1


def test_the_key_separates_prompt_and_call_settings(tmp_path: Path) -> None:
    calls: list[str] = []
    llm = counting_llm(calls, SQLiteLLMCache(tmp_path / "calls.sqlite"))
    llm.invoke("one")
    llm.invoke("two")  # another prompt
    llm.invoke("one", stop=["\n"])  # other stop sequences
    llm.invoke("one", temperature=0.7, seed=1)  # sampled
    llm.invoke("one", temperature=0.7, seed=2)  # another seed
    assert len(calls) == 5
    llm.invoke("one", temperature=0.7, seed=2)
    assert len(calls) == 5


def test_the_key_separates_local_models_and_their_settings(tiny_llm_dir: Path, tmp_path: Path) -> None:
    cache = SQLiteLLMCache(tmp_path / "calls.sqlite")
    base = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=4, cache=cache, model_name="tiny")
    first = base.invoke("Passage Question")
    assert not is_cache_hit(first) and is_cache_hit(base.invoke("Passage Question"))
    # Another budget, another loop rule, another backend: each misses.
    for other in (
        base.model_copy(update={"max_new_tokens": 5}),
        base.model_copy(update={"stop_repeats": 0}),
        base.model_copy(update={"logprobs": True}),
    ):
        assert other._identifying_params != base._identifying_params
        assert not is_cache_hit(other.invoke("Passage Question"))
    # Other weights under the same name: the key holds the weights' digest, not the path.
    moved = tmp_path / "other-weights"
    moved.mkdir()
    for item in tiny_llm_dir.iterdir():
        (moved / item.name).write_bytes(item.read_bytes())
    copy = TransformersChatModel(model_path=str(moved), max_new_tokens=4, cache=cache, model_name="tiny")
    assert copy.weights_digest == base.weights_digest  # the same bytes elsewhere: the same model
    assert is_cache_hit(copy.invoke("Passage Question"))
    weights = next(p for p in moved.iterdir() if p.suffix == ".safetensors")
    weights.write_bytes(weights.read_bytes()[:-8] + b"\x00" * 8)  # one tensor's last bytes changed
    changed = TransformersChatModel(model_path=str(moved), max_new_tokens=4, cache=cache, model_name="tiny")
    assert changed.weights_digest != base.weights_digest


def _write_replies(path: str, worker: int, count: int) -> None:
    cache = SQLiteLLMCache(path)
    llm = RuleChatModel(respond=lambda m: f"worker {worker}: {m[-1].content}", cache=cache)
    for i in range(count):
        llm.invoke(f"shared {i}")  # both workers ask these: one whole reply stays for each
        llm.invoke(f"own {worker} {i}")


def test_two_processes_share_one_file_without_loss(tmp_path: Path) -> None:
    path = str(tmp_path / "calls.sqlite")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_replies, args=(path, w, 40)) for w in (1, 2)]
    for p in workers:
        p.start()
    for p in workers:
        p.join(timeout=120)
        assert p.exitcode == 0
    cache = SQLiteLLMCache(path)
    assert len(cache) == 40 + 2 * 40
    calls: list[str] = []
    llm = counting_llm(calls, cache)
    for w in (1, 2):
        for i in range(40):
            assert llm.invoke(f"own {w} {i}").content == f"worker {w}: own {w} {i}"
    shared = {llm.invoke(f"shared {i}").content for i in range(40)}
    assert all(s.split(": ", 1)[1].startswith("shared ") for s in shared) and calls == []


@pytest.mark.parametrize("damage", [b"this is not a database" * 100, b"SQLite format 3\x00" + b"\xff" * 5000])
def test_a_damaged_file_is_set_aside_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: bytes
) -> None:
    path = tmp_path / "calls.sqlite"
    path.write_bytes(damage)
    with caplog.at_level(logging.WARNING, logger="searchain_graph.llms.call_cache"):
        cache = SQLiteLLMCache(path)
    assert "is damaged" in caplog.text and "moved it to" in caplog.text
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == damage  # nothing lost: the file is kept aside
    calls: list[str] = []
    llm = counting_llm(calls, cache)
    llm.invoke("q")
    assert is_cache_hit(llm.invoke("q")) and len(calls) == 1


def test_a_row_it_cannot_read_is_a_miss_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    calls: list[str] = []
    llm = counting_llm(calls, SQLiteLLMCache(path))
    llm.invoke("q")
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE llm_calls SET generation = '{not json'")
    conn.close()
    assert llm.invoke("q").content == "reply 2" and len(calls) == 2


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must be a file"):
        SQLiteLLMCache(tmp_path)


def test_the_graph_takes_a_cache_and_counts_its_hits(tmp_path: Path) -> None:
    llm = correcting_llm()
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(CONFIDENT), llm_cache=tmp_path / "calls.sqlite")
    first = graph.invoke({"question": QUESTION})
    second = graph.invoke({"question": QUESTION})
    assert first["usage"]["llm_cache_hits"] == 0
    assert second["usage"]["llm_cache_hits"] == second["usage"]["llm_calls"] == first["usage"]["llm_calls"] > 0
    for key in ("answer", "final_content", "references", "rounds"):
        assert second[key] == first[key]
    assert llm.cache is None  # the graph cached through a copy: the caller's model is as it was


def test_any_langchain_cache_is_counted() -> None:
    cache = InMemoryCache()
    graph = create_searchain_graph(correcting_llm(), retriever(), ScriptedReader(CONFIDENT), llm_cache=cache)
    graph.invoke({"question": QUESTION})
    again = graph.invoke({"question": QUESTION})
    assert again["usage"]["llm_cache_hits"] == again["usage"]["llm_calls"] > 0


def test_the_graph_refuses_what_is_no_cache() -> None:
    with pytest.raises(TypeError, match="llm_cache must be a langchain_core BaseCache"):
        create_searchain_graph(correcting_llm(), retriever(), ScriptedReader(CONFIDENT), llm_cache=42)  # type: ignore[arg-type]


def test_is_cache_hit_is_false_for_a_plain_reply() -> None:
    assert not is_cache_hit(AIMessage("x", usage_metadata={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2}))
