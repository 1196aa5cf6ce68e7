"""GGUF blocks written into an ONNX model, type by type and end to end.

* Each GGML type's decoder against the ``gguf`` package's own dequantisation, on random blocks
  (valid fp16 scales, every other byte random), so every bit of the layout is exercised.
* Tiny models whose weights are exactly what their GGUF tensors hold: a Llama in Q4_1/Q8_0
  (quantised by the ``gguf`` package; rows permuted as llama.cpp stores them) and a Qwen2 in the
  1.5B's mix (Q4_K projections, Q6_K values and down projections, a Q4_K embedding and a Q6_K
  output layer) and the 0.5B's (Q5_0, Q8_0). The ONNX model written from the blocks must follow
  the reference's logits; re-quantising the same weights with the builder is further off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from searchain_graph.llms.gguf_blocks import DECODERS, Layout, NotExactError, decode, unpermute_rows, write_blocks
from searchain_graph.llms.onnx_genai import GenAIDecoder, build_genai_model
from tests.tiny_models import TINY_SIZES

gguf = pytest.importorskip("gguf")
quants = gguf.quants

# bytes per block, weights per block, offsets of fp16 fields
LAYOUTS = {"Q4_1": (20, 32, [0, 2]), "Q4_K": (144, 256, [0, 2]), "Q5_0": (22, 32, [0]), "Q6_K": (210, 256, [208]),
           "Q8_0": (34, 32, [0])}  # fmt: skip
PROJECTIONS = [
    ("self_attn.q_proj", "attn_q"),
    ("self_attn.k_proj", "attn_k"),
    ("self_attn.v_proj", "attn_v"),
    ("self_attn.o_proj", "attn_output"),
    ("mlp.gate_proj", "ffn_gate"),
    ("mlp.up_proj", "ffn_up"),
    ("mlp.down_proj", "ffn_down"),
]


def random_blocks(kind: str, rows: int, cols: int, rng: np.random.Generator, scale: float = 0.02) -> np.ndarray:
    """Raw rows of ``kind``: random bytes with small, finite fp16 scales."""
    size, per, halves = LAYOUTS[kind]
    raw = rng.integers(0, 256, (rows, cols // per, size), dtype=np.uint8)
    for offset in halves:
        values = rng.uniform(-scale, scale, (rows, cols // per)).astype(np.float16)
        raw[..., offset : offset + 2] = values[..., None].view(np.uint8)
    if kind == "Q6_K":  # int8 sub-block scales: keep them small so the weights stay small
        raw[..., 192:208] = rng.integers(-8, 8, (rows, cols // per, 16), dtype=np.int8).view(np.uint8)
    if kind == "Q4_K":  # 6-bit scales and mins: small too
        raw[..., 4:16] &= 0x33
    return raw.reshape(rows, -1)


@pytest.mark.parametrize("kind", sorted(LAYOUTS))
def test_each_type_decodes_as_the_gguf_package_does(kind: str) -> None:
    rng = np.random.default_rng(0)
    size, per, _ = LAYOUTS[kind]
    raw = random_blocks(kind, 5, 2 * per, rng, scale=1.0)
    raw[..., :] = rng.integers(0, 256, raw.shape, dtype=np.uint8)  # every byte random ...
    for block in range(2):  # ... but the fp16 fields finite
        for offset in LAYOUTS[kind][2]:
            start = block * size + offset
            raw[:, start : start + 2] = rng.uniform(-1, 1, 5).astype(np.float16)[:, None].view(np.uint8)
    reference = quants.dequantize(raw, getattr(gguf.GGMLQuantizationType, kind)).reshape(5, -1)
    blocks = decode((raw, kind))
    assert blocks.bits in (4, 8) and blocks.q.max() < 2**blocks.bits and blocks.block in (16, 32)
    np.testing.assert_allclose(blocks.dequantize(), reference, rtol=1e-6, atol=1e-6 * np.abs(reference).max())


def test_a_type_without_an_exact_form_is_refused_by_name() -> None:
    with pytest.raises(NotExactError, match="blk.0.attn_q.weight is Q3_K"):
        decode((np.zeros((1, 110), np.uint8), "Q3_K"), "blk.0.attn_q.weight")
    assert set(DECODERS) == {"Q4_1", "Q4_K", "Q5_0", "Q6_K", "Q8_0"}


def permute_rows(w: np.ndarray, heads: int) -> np.ndarray:
    """llama.cpp's rotary permutation of query/key rows, as its converter writes them."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_unpermuting_undoes_llama_cpps_permutation() -> None:
    w = np.random.default_rng(0).standard_normal((8, 64)).astype(np.float32)
    assert np.array_equal(unpermute_rows(permute_rows(w, 2), 2), w)


def exact_checkpoint(model: Any, types: dict[str, str], out: Path, tok_dir: Path, *, permuted: bool) -> dict[str, Any]:
    """Give ``model`` the weights of random (or gguf-quantised) blocks of ``types``; save it; the raw tensors."""
    import torch
    from transformers import AutoTokenizer

    rng = np.random.default_rng(1)
    config, state = model.config, model.state_dict()
    tensors: dict[str, Any] = {}

    def put(key: str, name: str, kind: str, heads: int | None = None) -> None:
        w = state[key].float().numpy()
        if kind in ("Q4_1", "Q8_0", "Q5_0"):  # the gguf package quantises these
            stored = quants.quantize(permute_rows(w, heads) if heads else w, getattr(gguf.GGMLQuantizationType, kind))
        else:
            stored = random_blocks(kind, w.shape[0], w.shape[1], rng)
        tensors[name] = (stored, kind)
        back = quants.dequantize(stored, getattr(gguf.GGMLQuantizationType, kind)).reshape(w.shape)
        state[key].copy_(torch.from_numpy(unpermute_rows(back, heads) if heads else back))

    for layer in range(config.num_hidden_layers):
        for hf, name in PROJECTIONS:
            heads = {"attn_q": config.num_attention_heads, "attn_k": config.num_key_value_heads}.get(name)
            key, heads = f"model.layers.{layer}.{hf}.weight", heads if permuted else None
            put(key, f"blk.{layer}.{name}.weight", types[name], heads)
    put("model.embed_tokens.weight", "token_embd.weight", types["token_embd"])
    if not config.tie_word_embeddings:
        put("lm_head.weight", "output.weight", types["output"])
    model.load_state_dict(state)
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(tok_dir).save_pretrained(out)
    return tensors


def forced_error(built: Path, model: Any) -> float:
    import torch

    ids = list(range(3, 40))
    prompt, continuation = ids[:5], ids[5:]
    with torch.inference_mode():
        reference = model(input_ids=torch.tensor([ids])).logits[0, len(prompt) - 1 : -1].numpy()
    got = GenAIDecoder(built, eos_ids=[]).forced_logits(prompt, continuation)
    return float(np.abs(got - reference).max() / np.abs(reference).max())


def tiny_llama(tok_dir: Path, tied: bool) -> Any:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tok_dir)
    config = LlamaConfig(
        vocab_size=len(tok), **TINY_SIZES, num_key_value_heads=2, max_position_embeddings=512,
        tie_word_embeddings=tied, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(1)
    return LlamaForCausalLM(config).eval()


def tiny_qwen2(tok_dir: Path) -> Any:
    """K-quants need rows of 256: hidden 256, intermediate 512, untied like the 1.5B's file."""
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    tok = AutoTokenizer.from_pretrained(tok_dir)
    config = Qwen2Config(
        vocab_size=len(tok), hidden_size=256, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=512, max_position_embeddings=512, tie_word_embeddings=False,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    torch.manual_seed(2)
    model = Qwen2ForCausalLM(config).eval()
    with torch.no_grad():  # Qwen2's query/key/value biases, non-zero so that their path is checked
        for layer in model.model.layers:
            for proj in (layer.self_attn.q_proj, layer.self_attn.k_proj, layer.self_attn.v_proj):
                proj.bias.normal_(0, 0.02)
    return model


LLAMA_Q4_1 = {**{name: "Q4_1" for _, name in PROJECTIONS}, "token_embd": "Q8_0", "output": "Q8_0"}
QWEN_1_5B = {**{name: "Q4_K" for _, name in PROJECTIONS}, "attn_v": "Q6_K", "ffn_down": "Q6_K",
             "token_embd": "Q4_K", "output": "Q6_K"}  # fmt: skip
QWEN_0_5B = {**{name: "Q5_0" for _, name in PROJECTIONS}, "attn_v": "Q8_0", "ffn_down": "Q6_K",
             "token_embd": "Q5_0", "output": "Q8_0"}  # fmt: skip


@pytest.mark.parametrize(
    ("family", "types", "tied"),
    [
        ("llama", LLAMA_Q4_1, True),
        ("llama", LLAMA_Q4_1, False),
        ("qwen2", QWEN_1_5B, False),
        ("qwen2", QWEN_0_5B, False),
    ],
    ids=["llama-q4_1-tied", "llama-q4_1-untied", "qwen2-1.5b-mix", "qwen2-0.5b-mix"],
)
def test_the_written_model_follows_the_gguf_weights(
    family: str, types: dict[str, str], tied: bool, tiny_llm_dir: Path, tmp_path: Path
) -> None:
    model = tiny_llama(tiny_llm_dir, tied) if family == "llama" else tiny_qwen2(tiny_llm_dir)
    permuted = family == "llama"
    tensors = exact_checkpoint(model, types, tmp_path / "hf", tiny_llm_dir, permuted=permuted)
    config = model.config
    layout = Layout(heads=config.num_attention_heads, kv_heads=config.num_key_value_heads, permuted=permuted)
    built = build_genai_model(
        tmp_path / "hf", tmp_path / "onnx", precision="gguf-blocks",
        transform=lambda d: write_blocks(d, tensors.get, layout),
    )  # fmt: skip
    error = forced_error(built, model)
    assert error < 0.05, error  # the weights are the GGUF's; only the int8 activations differ
    if family == "qwen2" and types is QWEN_1_5B:  # once is enough (a build costs seconds of CI)
        again = build_genai_model(tmp_path / "hf", tmp_path / "requantised", precision="int4")
        assert forced_error(again, model) > error  # re-quantising the same weights is further off


def test_a_missing_tensor_is_refused_and_nothing_is_left(tiny_llm_dir: Path, tmp_path: Path) -> None:
    model = tiny_llama(tiny_llm_dir, True)
    tensors = exact_checkpoint(model, LLAMA_Q4_1, tmp_path / "hf", tiny_llm_dir, permuted=True)
    del tensors["blk.1.ffn_up.weight"]
    target = tmp_path / "onnx"
    with pytest.raises(NotExactError, match=r"blk\.1\.ffn_up\.weight"):
        build_genai_model(
            tmp_path / "hf", target, precision="gguf-blocks",
            transform=lambda d: write_blocks(d, tensors.get, Layout(heads=2, kv_heads=2)),
        )  # fmt: skip
    assert not target.exists() and [p.name for p in tmp_path.iterdir()] == ["hf"]
