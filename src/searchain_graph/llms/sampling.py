"""One reply of a local model in PyTorch, and the decoding rules both local backends share.

* **Loops end.** A small model often ends its reply by repeating one sentence until its token
  budget runs out (SmolLM2 writes "So the answer is X." 20 times after a Chain-of-Query).
  :func:`repeats_at_end` detects a reply whose last tokens are one run repeated ``times`` times in
  a row, and the local backends end the reply there (``TransformersChatModel(stop_repeats=3)``):
  the text before the loop is unchanged, the repeats cost nothing more.
* **Sampling.** Greedy decoding is the default everywhere (SearChain and its baselines decode greedily). Methods
that vote over several reasoning paths (CoT-SC, Wang et al., 2023; Recite-and-Answer's multiple
recitations, Sun et al., 2023) sample instead: ``temperature`` > 0, from the ``SAMPLING_TOP_K``
most likely tokens, as Wang et al. sample (T = 0.7, top-k 40). A ``seed`` makes a sampled reply
reproducible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

SAMPLING_TOP_K = 40
"""Tokens a sampled reply draws from (the most likely ones), as in Wang et al. (2023)."""

REPEAT_PERIODS = range(4, 65)
"""Lengths (in tokens) of the runs :func:`repeats_at_end` looks for."""


def repeats_at_end(ids: Sequence[int], times: int) -> bool:
    """Whether ``ids`` ends with one run of ``REPEAT_PERIODS`` tokens repeated ``times`` times in a row.

    Never true for ``times`` < 2.
    """
    if times < 2:
        return False
    n = len(ids)
    for period in REPEAT_PERIODS:
        if period * times > n:
            break
        tail = list(ids[n - period :])
        if all(list(ids[n - k * period : n - (k - 1) * period]) == tail for k in range(2, times + 1)):
            return True
    return False


def sample_token(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    """A token drawn from the ``SAMPLING_TOP_K`` most likely of ``logits`` at ``temperature`` (> 0)."""
    logits = np.asarray(logits, dtype=np.float64).reshape(-1)
    k = min(SAMPLING_TOP_K, logits.size)
    top = np.argpartition(logits, -k)[-k:]
    scaled = (logits[top] - logits[top].max()) / temperature
    weights = np.exp(scaled)
    return int(top[rng.choice(k, p=weights / weights.sum())])


def generate_one(
    model: Any,
    tokenizer: Any,
    ids: list[int],
    max_new: int,
    stop: list[str],
    want_logprobs: bool,
    *,
    temperature: float = 0.0,
    seed: int | None = None,
    stop_repeats: int = 0,
) -> tuple[list[int], list[float], str]:
    """One sequence through ``model.generate``: (new ids without EOS, their logprobs, finish reason).

    Sampling (``temperature`` > 0) seeds PyTorch's global generator with ``seed`` when given; a
    reply ends once :func:`repeats_at_end` finds ``stop_repeats`` repeats.
    """
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    class _Loop(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            done = repeats_at_end(input_ids[0, len(ids) :].tolist(), stop_repeats)
            return torch.full((input_ids.shape[0],), done, dtype=torch.bool)

    gen_kwargs: dict[str, Any] = {
        "max_new_tokens": max_new,
        "do_sample": temperature > 0,
        "return_dict_in_generate": True,
        "output_logits": want_logprobs,
        "pad_token_id": tokenizer.pad_token_id,
    }
    if temperature > 0:
        gen_kwargs.update(temperature=temperature, top_k=SAMPLING_TOP_K, top_p=1.0)
        if seed is not None:
            torch.manual_seed(seed)
    if stop:
        gen_kwargs["stop_strings"] = stop
        gen_kwargs["tokenizer"] = tokenizer
    if stop_repeats >= 2:
        gen_kwargs["stopping_criteria"] = StoppingCriteriaList([_Loop()])
    input_ids = torch.tensor([ids], dtype=torch.long)
    with torch.inference_mode():
        out = model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids), **gen_kwargs)
    new_ids = out.sequences[0, len(ids) :].tolist()
    finish = "length"
    if new_ids and tokenizer.eos_token_id is not None and new_ids[-1] == tokenizer.eos_token_id:
        new_ids = new_ids[:-1]
        finish = "stop"
    elif len(new_ids) < max_new or repeats_at_end(new_ids, stop_repeats):
        finish = "stop"  # a stop string or a loop
    logprobs = (
        [float(torch.log_softmax(out.logits[i][0].float(), dim=-1)[t]) for i, t in enumerate(new_ids)]
        if want_logprobs
        else []
    )
    return new_ids, logprobs, finish


def trim_logprobs(tokens: list[dict[str, Any]], chars: int) -> list[dict[str, Any]]:
    """Token log-probabilities (OpenAI's layout) of a reply cut at a stop: the tokens within its first ``chars``."""
    kept, used = [], 0
    for tok in tokens:
        if used >= chars:
            break
        kept.append(tok)
        used += len(tok["token"])
    return kept
