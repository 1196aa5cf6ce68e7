"""Decoding rules of the local models: loops end, sampled replies are seeded, greedy stays greedy."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.sampling import SAMPLING_TOP_K, generate_one, repeats_at_end, sample_token


def test_a_loop_is_found_only_once_repeated_enough() -> None:
    sentence = [5, 6, 7, 8, 9]
    assert repeats_at_end([1, 2] + sentence * 3, 3)
    assert not repeats_at_end([1, 2] + sentence * 2, 3)
    assert repeats_at_end([1, 2] + sentence * 2, 2)
    assert not repeats_at_end(sentence * 3 + [4], 3)  # the loop must be at the end
    assert not repeats_at_end([3] * 11, 3)  # runs under 4 tokens are not loops: 3 x 4 tokens needed
    assert repeats_at_end([3] * 12, 3)
    assert not repeats_at_end(sentence * 5, 1) and not repeats_at_end([], 3)


def test_sampling_draws_from_the_top_k_and_follows_the_temperature() -> None:
    logits = np.zeros(1000)
    logits[:SAMPLING_TOP_K] = np.linspace(5, 6, SAMPLING_TOP_K)
    rng = np.random.default_rng(0)
    draws = [sample_token(logits, 1.0, rng) for _ in range(300)]
    assert set(draws) <= set(range(SAMPLING_TOP_K)) and len(set(draws)) > 10
    peaked = np.zeros(1000)
    peaked[42] = 50.0
    assert {sample_token(peaked, 0.7, rng) for _ in range(50)} == {42}
    cold = [sample_token(logits, 0.001, rng) for _ in range(50)]
    assert cold.count(SAMPLING_TOP_K - 1) == 50  # a very low temperature is nearly greedy


@pytest.fixture(scope="module")
def tiny(tiny_llm_dir: Path) -> TransformersChatModel:
    return TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=12, backend="torch").load()


def test_torch_sampling_is_seeded_and_greedy_is_the_default(tiny: TransformersChatModel) -> None:
    greedy = [tiny.invoke("Passage Question").content for _ in range(2)]
    assert greedy[0] == greedy[1]
    a = tiny.invoke("Passage Question", temperature=1.5, seed=7).content
    b = tiny.invoke("Passage Question", temperature=1.5, seed=7).content
    others = {tiny.invoke("Passage Question", temperature=1.5, seed=s).content for s in range(8)}
    assert a == b and len(others) > 1


def test_a_loop_ends_the_reply_on_the_torch_path(tiny: TransformersChatModel) -> None:
    model, tok = tiny._model, tiny._tokenizer
    ids = list(tok("Passage Question")["input_ids"])
    free, _, _ = generate_one(model, tok, ids, 40, [], False)
    times = next((t for t in (2, 3) if any(repeats_at_end(free[:n], t) for n in range(1, len(free) + 1))), None)
    if times is None:
        pytest.skip("the tiny model's greedy reply has no loop")  # the random weights decide
    end = next(n for n in range(1, len(free) + 1) if repeats_at_end(free[:n], times))
    cut, _, finish = generate_one(model, tok, ids, 40, [], False, stop_repeats=times)
    assert cut == free[:end] and finish == "stop"
