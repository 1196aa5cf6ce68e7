"""The ONNX Runtime GenAI backend on a tiny random model: conversion, decoding, prefix reuse, caches."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.onnx_genai import (
    KEPT_PREFIXES,
    GenAIDecoder,
    build_genai_model,
    default_threads,
    kept_prefixes,
)
from searchain_graph.llms.weights import content_key


@pytest.fixture(scope="session")
def tiny_onnx(tiny_llm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("onnx")
    return {p: build_genai_model(tiny_llm_dir, root / p, precision=p) for p in ("fp32", "int4")}


def prompt_ids(tiny_llm_dir: Path, text: str) -> list[int]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_llm_dir)
    return list(tok(text)["input_ids"])


def torch_logits(tiny_llm_dir: Path, ids: list[int]) -> np.ndarray:
    import torch
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_llm_dir).eval()
    with torch.inference_mode():
        return model(input_ids=torch.tensor([ids])).logits[0].float().numpy()


@pytest.mark.parametrize("precision", ["fp32", "int4"])
def test_logits_follow_the_fp32_model_within_a_tolerance(
    precision: str, tiny_llm_dir: Path, tiny_onnx: dict[str, Path]
) -> None:
    ids = prompt_ids(tiny_llm_dir, "[Query 1]: Who is the performer of Spirit If...? [Answer 1]: Kevin Drew.")
    prompt, continuation = ids[:6], ids[6:]
    reference = torch_logits(tiny_llm_dir, ids)[len(prompt) - 1 : -1]
    got = GenAIDecoder(tiny_onnx[precision], eos_ids=[]).forced_logits(prompt, continuation)
    assert got.shape == reference.shape
    error = np.abs(got - reference).max() / np.abs(reference).max()
    # fp32 differs only in the order of operations; 4-bit weights cost a few percent of the range.
    assert error < (1e-3 if precision == "fp32" else 0.15), error
    assert not np.array_equal(got, reference)


def test_greedy_decoding_matches_the_torch_path_in_fp32(tiny_llm_dir: Path, tiny_onnx: dict[str, Path]) -> None:
    ids = prompt_ids(tiny_llm_dir, "Construct a global reasoning chain for this complex question.")
    new, logprobs, finish = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[]).generate(ids, 12, logprobs=True)
    assert finish == "length" and len(new) == len(logprobs) == 12
    seq = list(ids)
    for token, logprob in zip(new, logprobs, strict=True):
        logits = torch_logits(tiny_llm_dir, seq)[-1].astype(np.float64)
        reference = logits - logits.max() - np.log(np.exp(logits - logits.max()).sum())
        assert token == int(np.argmax(logits)) or reference[token] == pytest.approx(reference.max(), abs=1e-4)
        assert logprob == pytest.approx(float(reference[token]), abs=1e-3)
        seq.append(token)


def test_kept_prefixes_come_from_the_environment_or_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SEARCHAIN_KEPT_PREFIXES", raising=False)
    assert kept_prefixes() == KEPT_PREFIXES
    monkeypatch.setenv("SEARCHAIN_KEPT_PREFIXES", " 0 ")
    assert kept_prefixes() == 0
    for bad in ("-1", "2.5", "many", "１"):  # "１" is a full-width digit: isdigit() but not ASCII
        monkeypatch.setenv("SEARCHAIN_KEPT_PREFIXES", bad)
        with pytest.raises(ValueError, match="SEARCHAIN_KEPT_PREFIXES must be a whole number"):
            kept_prefixes()


def test_a_kept_prefix_gives_what_a_cold_prefill_gives(tiny_llm_dir: Path, tiny_onnx: dict[str, Path]) -> None:
    demo = "Construct a global reasoning chain for this complex question. " * 4
    first = prompt_ids(tiny_llm_dir, demo + "Passage Question")
    second = prompt_ids(tiny_llm_dir, demo + "Question unanswerable Passage")
    warm = GenAIDecoder(tiny_onnx["int4"], eos_ids=[], keep=2)
    warm.generate(first, 5)
    got, got_lp, _ = warm.generate(second, 10, logprobs=True)
    assert warm.stats.per_call_reuse[1] >= len(prompt_ids(tiny_llm_dir, demo)) - 2  # the demonstration was kept
    cold, cold_lp, _ = GenAIDecoder(tiny_onnx["int4"], eos_ids=[], keep=0).generate(second, 10, logprobs=True)
    assert got == cold
    assert got_lp == pytest.approx(cold_lp, abs=1e-4)
    # The same prompt again reuses all but the last two tokens, and still agrees.
    again, _, _ = warm.generate(second, 10)
    assert again == cold and warm.stats.per_call_reuse[2] == len(second) - 2


def test_thread_count_follows_the_environment_and_does_not_change_tokens(
    tiny_llm_dir: Path, tiny_onnx: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert default_threads() == 3
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert default_threads() >= 1
    monkeypatch.delenv("OMP_NUM_THREADS")
    assert default_threads() >= 1
    ids = prompt_ids(tiny_llm_dir, "Construct a global reasoning chain for this complex question.")
    one = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[], threads=1)
    two = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[], threads=2)
    assert (one.threads, two.threads) == (1, 2)
    a, b = one.forced_logits(ids[:4], ids[4:]), two.forced_logits(ids[:4], ids[4:])
    # Threads split the sums differently: close, never compared exactly.
    assert a.shape == b.shape and np.abs(a - b).max() <= 1e-4 * np.abs(a).max()


def test_stop_and_eos_end_the_reply(tiny_llm_dir: Path, tiny_onnx: dict[str, Path]) -> None:
    ids = prompt_ids(tiny_llm_dir, "Passage Question")
    free, _, _ = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[]).generate(ids, 8)
    stopped, _, finish = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[]).generate(ids, 8, stop=lambda new: len(new) == 3)
    assert finish == "stop" and stopped == free[:3]
    ended, _, finish = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[free[2]]).generate(ids, 8)
    assert finish == "stop" and ended == free[: free.index(free[2])]


def test_chat_model_on_the_onnx_backend(
    tiny_llm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_onnx: dict[str, Path]
) -> None:
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path / "cache"))
    llm = TransformersChatModel(model_path=str(tiny_llm_dir), backend="onnx-int4", max_new_tokens=6)
    reply = llm.invoke("Passage Question", logprobs=True)
    assert reply.usage_metadata is not None and 0 < reply.usage_metadata["output_tokens"] <= 6
    assert len(reply.response_metadata["logprobs"]["content"]) <= reply.usage_metadata["output_tokens"]
    assert llm.invoke("Passage Question").content == reply.content
    converted = list((tmp_path / "cache" / "onnx").iterdir())
    assert len(converted) == 1 and (converted[0] / "genai_config.json").is_file()
    # A second model object on the same checkpoint finds the conversion in the cache.
    again = TransformersChatModel(model_path=str(tiny_llm_dir), backend="onnx-int4", max_new_tokens=6).load()
    assert again.invoke("Passage Question").content == reply.content
    assert list((tmp_path / "cache" / "onnx").iterdir()) == converted


def test_content_key_follows_the_bytes_not_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path / "cache"))
    a = tmp_path / "a" / "model.gguf"
    a.parent.mkdir()
    a.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    b = tmp_path / "b" / "model.gguf"
    b.parent.mkdir()
    shutil.copy(a, b)
    assert content_key(a) == content_key(b) == content_key(a)  # the third read comes from the memo
    b.write_bytes(b"GGUF" + bytes(range(255, -1, -1)) * 64)
    assert content_key(b) != content_key(a)


def test_an_unknown_precision_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown ONNX precision 'int2'"):
        build_genai_model(tmp_path, tmp_path / "out", precision="int2")


def test_sampling_on_the_onnx_backend_is_seeded_and_keeps_prefixes(
    tiny_llm_dir: Path, tiny_onnx: dict[str, Path]
) -> None:
    ids = prompt_ids(tiny_llm_dir, "Construct a global reasoning chain for this complex question.")
    decoder = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[], keep=2)
    greedy, _, _ = decoder.generate(ids, 10)
    a, a_lp, _ = decoder.generate(ids, 10, temperature=1.5, seed=3, logprobs=True)
    b, b_lp, _ = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[], keep=0).generate(
        ids, 10, temperature=1.5, seed=3, logprobs=True
    )
    assert decoder.stats.per_call_reuse[1] > 0  # the sample continued the greedy call's kept prefix
    assert a == b and a_lp == pytest.approx(b_lp, abs=1e-4)  # same seed, same sample, warm or cold
    samples = {tuple(decoder.generate(ids, 10, temperature=1.5, seed=s)[0]) for s in range(6)}
    assert len(samples) > 1
    assert decoder.generate(ids, 10)[0] == greedy  # greedy after sampling is still greedy


def test_a_loop_ends_the_reply_on_the_onnx_backend(tiny_llm_dir: Path, tiny_onnx: dict[str, Path]) -> None:
    from searchain_graph.llms.sampling import repeats_at_end

    ids = prompt_ids(tiny_llm_dir, "Passage Question")
    free, _, _ = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[]).generate(ids, 40)
    ends = [n for n in range(1, len(free) + 1) if repeats_at_end(free[:n], 2)]
    if not ends:
        pytest.skip("the tiny model's greedy reply has no loop")  # the random weights decide
    cut, _, finish = GenAIDecoder(tiny_onnx["fp32"], eos_ids=[]).generate(
        ids, 40, stop=lambda new: repeats_at_end(new, 2)
    )
    assert cut == free[: ends[0]] and finish == "stop"
