"""GGUF blocks written into an ONNX model: a tiny random Llama, quantised to Q4_1/Q8_0 here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from searchain_graph.llms.gguf_blocks import NotExactError, q4_1, unpermute_rows, write_blocks
from searchain_graph.llms.onnx_genai import GenAIDecoder, build_genai_model
from tests.tiny_models import TINY_SIZES

gguf = pytest.importorskip("gguf")
quants = gguf.quants
Q4_1, Q8_0 = gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0
PROJECTIONS = [
    ("self_attn.q_proj", "attn_q"),
    ("self_attn.k_proj", "attn_k"),
    ("self_attn.v_proj", "attn_v"),
    ("self_attn.o_proj", "attn_output"),
    ("mlp.gate_proj", "ffn_gate"),
    ("mlp.up_proj", "ffn_up"),
    ("mlp.down_proj", "ffn_down"),
]


def permute_rows(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's rotary permutation of query/key rows, as its converter writes them."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gguf_checkpoint(tiny_llm_dir: Path, out: Path, *, tied: bool) -> tuple[Path, dict[str, Any], Any]:
    """A tiny Llama whose weights are exactly what its Q4_1/Q8_0 GGUF tensors hold, and those tensors."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_llm_dir)
    config = LlamaConfig(
        vocab_size=len(tok),
        **TINY_SIZES,
        num_key_value_heads=2,
        max_position_embeddings=512,
        tie_word_embeddings=tied,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
    )
    torch.manual_seed(1)
    model = LlamaForCausalLM(config).eval()
    state = model.state_dict()
    tensors: dict[str, Any] = {}
    for layer in range(config.num_hidden_layers):
        for hf, name in PROJECTIONS:
            key = f"model.layers.{layer}.{hf}.weight"
            heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}.get(name)
            w = state[key].float().numpy()
            stored = quants.quantize(permute_rows(w, heads) if heads else w, Q4_1)
            tensors[f"blk.{layer}.{name}.weight"] = (stored, "Q4_1")
            back = quants.dequantize(stored, Q4_1).reshape(w.shape)
            state[key].copy_(torch.from_numpy(unpermute_rows(back, heads) if heads else back))
    embedding = state["model.embed_tokens.weight"].float().numpy()
    stored = quants.quantize(embedding, Q8_0)
    tensors["token_embd.weight"] = (stored, "Q8_0")
    state["model.embed_tokens.weight"].copy_(torch.from_numpy(quants.dequantize(stored, Q8_0).reshape(embedding.shape)))
    model.load_state_dict(state)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out, tensors, model


def test_q4_1_blocks_decode_as_ggml_does() -> None:
    w = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    stored = quants.quantize(w, Q4_1)
    q, d, m = q4_1(stored)
    assert q.shape == (8, 2, 32) and q.max() <= 15
    ours = (d[..., None] * q + m[..., None]).reshape(w.shape)
    assert np.array_equal(ours, quants.dequantize(stored, Q4_1).reshape(w.shape))
    assert np.array_equal(unpermute_rows(permute_rows(w, 2), 2), w)


def test_the_written_model_follows_the_gguf_weights(tiny_llm_dir: Path, tmp_path: Path) -> None:
    import torch

    source, tensors, model = gguf_checkpoint(tiny_llm_dir, tmp_path / "hf", tied=True)

    def exact(model_dir: Path) -> None:
        write_blocks(model_dir, tensors.get, heads=2, kv_heads=2)

    built = build_genai_model(source, tmp_path / "onnx", precision="int4-gguf", transform=exact)
    ids = list(range(3, 40))
    prompt, continuation = ids[:5], ids[5:]
    with torch.inference_mode():
        reference = model(input_ids=torch.tensor([ids])).logits[0, len(prompt) - 1 : -1].numpy()
    got = GenAIDecoder(built, eos_ids=[]).forced_logits(prompt, continuation)
    error = np.abs(got - reference).max() / np.abs(reference).max()
    assert error < 0.05, error  # the weights are the GGUF's; only the int8 activations differ
    # Re-quantising the same weights to int4 instead is further off.
    again = build_genai_model(source, tmp_path / "requantised", precision="int4")
    requantised = GenAIDecoder(again, eos_ids=[]).forced_logits(prompt, continuation)
    assert np.abs(requantised - reference).max() / np.abs(reference).max() > error


def test_untied_embeddings_are_refused_and_nothing_is_left(tiny_llm_dir: Path, tmp_path: Path) -> None:
    source, tensors, _ = gguf_checkpoint(tiny_llm_dir, tmp_path / "hf", tied=False)
    target = tmp_path / "onnx"
    with pytest.raises(NotExactError, match="untied"):
        build_genai_model(
            source,
            target,
            precision="int4-gguf",
            transform=lambda d: write_blocks(d, tensors.get, heads=2, kv_heads=2),
        )
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["hf"]
