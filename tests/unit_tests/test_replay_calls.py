"""``benchmarks/replay_calls.py``: an LLM that answers only from a run's LLM-call cache file, by prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from searchain_graph.llms.call_cache import SQLiteLLMCache
from tests.fakes import RuleChatModel
from tests.helpers import script_module


def _module() -> Any:
    return script_module("benchmarks/replay_calls.py")


def _record(path: Path, prompts: list[list[BaseMessage]], **settings: Any) -> list[str]:
    """Replies of a model with ``settings``, stored in the cache file at ``path`` as a run stores them."""
    seen: list[str] = []

    def reply(messages: list[BaseMessage]) -> str:
        seen.append(f"reply to {messages[-1].content} ({len(seen)})")
        return seen[-1]

    llm = RuleChatModel(respond=reply, cache=SQLiteLLMCache(path))
    return [str(llm.invoke(p, **settings).content) for p in prompts]


def test_a_stored_prompt_gets_its_reply_whatever_the_model_settings(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    prompts: list[list[BaseMessage]] = [
        [SystemMessage("Construct a chain."), HumanMessage("Where was Kevin Drew born?")],
        [HumanMessage("Who founded Arts & Crafts?")],
    ]
    replies = _record(path, prompts, stop=["\n\n"])
    replay = _module().ReplayedCalls(path=str(path))
    # The stored call had stop sequences; the replay matches on the messages alone.
    assert [replay.invoke(p).content for p in prompts] == replies
    assert replay.calls == {"answered": 2, "missed": 0, "ambiguous": 0}


def test_a_prompt_not_in_the_file_is_a_counted_miss(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    _record(path, [[HumanMessage("Where was Kevin Drew born?")]])
    replay = _module().ReplayedCalls(path=str(path))
    with pytest.raises(LookupError, match="no reply to this prompt"):
        replay.invoke([HumanMessage("Where was Kevin Drew born? ")])  # one space more: another prompt
    assert replay.calls["missed"] == 1 and replay.calls["answered"] == 0


def test_one_prompt_stored_under_two_settings_is_flagged(tmp_path: Path) -> None:
    path = tmp_path / "calls.sqlite"
    prompt: list[BaseMessage] = [HumanMessage("Where was Kevin Drew born?")]
    _record(path, [prompt])
    _record(path, [prompt], stop=["\n"])
    replay = _module().ReplayedCalls(path=str(path))
    replay.invoke(prompt)
    assert replay.calls == {"answered": 1, "missed": 0, "ambiguous": 1}


def test_the_command_refuses_a_missing_file_and_a_second_cache(tmp_path: Path) -> None:
    main = _module().main
    with pytest.raises(SystemExit):
        main(["--cache", str(tmp_path / "none.sqlite"), "--", "--dataset", "hotpotqa"])
    path = tmp_path / "calls.sqlite"
    _record(path, [[HumanMessage("q")]])
    with pytest.raises(SystemExit):
        main(["--cache", str(path), "--", "--cache", str(path)])
