"""TransformersChatModel on a tiny random-init Llama, and the choice of the default model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.caches import InMemoryCache
from langchain_core.messages import AIMessage, HumanMessage

from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.loading import load_chat_model


def test_generates_with_usage_and_logprobs(tiny_llm_dir: Path) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=12, logprobs=True)
    reply = llm.invoke([HumanMessage("Where was Kevin Drew born?"), AIMessage("Toronto."), HumanMessage("Sure?")])
    assert isinstance(reply, AIMessage)
    usage = reply.usage_metadata
    assert usage is not None
    assert usage["input_tokens"] > 10
    assert 1 <= usage["output_tokens"] <= 12
    tokens = reply.response_metadata["logprobs"]["content"]
    assert tokens and all(t["logprob"] <= 0.0 for t in tokens)
    assert "".join(t["token"] for t in tokens).startswith(reply.text[:5])


def test_greedy_decoding_is_deterministic(tiny_llm_dir: Path) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=8)
    assert llm.invoke("hello").text == llm.invoke("hello").text
    assert "logprobs" not in llm.invoke("hello").response_metadata


def test_stop_sequences_cut_the_reply(tiny_llm_dir: Path) -> None:
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=30)
    full = llm.invoke("Query").text
    assert len(full) > 2
    stop = full[1:3]
    cut = llm.invoke("Query", stop=[stop]).text
    assert stop not in cut
    assert full.startswith(cut)


def test_missing_model_paths_get_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match="model directory not found"):
        load_chat_model(str(tmp_path / "missing-model"))
    with pytest.raises(ModelNotFoundError, match="GGUF file not found"):
        load_chat_model(str(tmp_path / "model.gguf"))
    with pytest.raises(ModelNotFoundError, match="model directory not found"):
        TransformersChatModel(model_path=str(tmp_path / "gone")).invoke("x")
    with pytest.raises(ModelNotFoundError, match="GGUF file not found"):
        TransformersChatModel(model_path=str(tmp_path), gguf_file="x.gguf").invoke("x")
    with pytest.raises(ValueError, match="cannot interpret --model"):
        load_chat_model("no-such-thing")


def test_hub_names_fail_offline_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    llm = load_chat_model("hf:HuggingFaceTB/SmolLM2-135M-Instruct")
    with pytest.raises(ModelNotFoundError, match="pass the local directory instead of the name"):
        llm.invoke("x")


def test_default_choice_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    llm = load_chat_model(None)
    assert type(llm).__name__ == "ChatOpenAI"
    assert llm.model_name == "gpt-4o-mini"  # type: ignore[attr-defined]
    assert load_chat_model("openai:my-model").model_name == "my-model"  # type: ignore[attr-defined]
    monkeypatch.delenv("OPENAI_API_KEY")
    joined: list[str] = []

    def packaged(model: Any) -> Path:  # the parts are not joined here (test_packaged.py does that)
        joined.append(model.name)
        return Path("/cache/gguf") / model.file_name

    monkeypatch.setattr("searchain_graph.llms.chat_model.packaged_gguf", packaged)
    local = load_chat_model(None)
    assert isinstance(local, TransformersChatModel) and joined == ["qwen2.5-coder-1.5b"]
    assert local.model_name == "Qwen2.5-Coder-1.5B-Instruct" and local.gguf_file.endswith("q4_k_m.gguf")
    # The offline model runs its GGUF file as it is (llama.cpp) by default; torch stays the fp32 reference.
    assert local.backend == "llama.cpp"
    assert load_chat_model("smollm2", backend="torch").backend == "torch"  # type: ignore[attr-defined]


def test_loads_a_local_directory(tiny_llm_dir: Path) -> None:
    llm = load_chat_model(str(tiny_llm_dir), max_new_tokens=4)
    assert isinstance(llm, TransformersChatModel)
    assert llm.backend == "torch"  # other local models: the reference unless asked
    assert llm.invoke("hi").usage_metadata is not None


def test_options_of_a_local_model_are_set_when_it_is_built(tiny_llm_dir: Path) -> None:
    kept = InMemoryCache()
    llm = load_chat_model(str(tiny_llm_dir), max_new_tokens=4, max_batch_size=2, cache=kept)
    assert isinstance(llm, TransformersChatModel)
    assert (llm.max_batch_size, llm.cache) == (2, kept) and llm.decoder is None
    assert llm.invoke("hi").usage_metadata is not None
    assert load_chat_model(str(tiny_llm_dir)).cache is None  # no cache of its own unless given


def test_loading_a_component_draws_no_progress_bar(tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A reader or encoder loaded mid-run must not draw transformers' "Loading weights" bar among the rounds."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from searchain_graph.llms.hub import from_pretrained

    hf_logging.enable_progress_bar()
    from_pretrained(AutoModelForCausalLM.from_pretrained, str(tiny_llm_dir))
    assert "Loading weights" not in capsys.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # put back as it was
