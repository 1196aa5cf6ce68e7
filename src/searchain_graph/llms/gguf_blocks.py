"""Write a GGUF checkpoint's own quantised blocks into an ONNX Runtime GenAI model, bit for bit.

A GGUF file's weights are blocks of small integers with per-block scales. ONNX Runtime's
``MatMulNBits`` computes ``scale * (q - zero)`` per block, with 4- or 8-bit ``q``, a block of 16
or 32 weights along the input, and an implicit ``zero`` of 8 (4 bits) or 128 (8 bits). Every GGML
type used by the offline models maps onto it exactly (:func:`decode`, :class:`Blocks`):

======  ======================================================  ===========================
type    GGML's weight                                           ``MatMulNBits``
======  ======================================================  ===========================
Q4_1    ``d*q + m`` per 32 (4-bit ``q``)                        4 bits, 32; ``rest = 8d + m``
Q4_K    ``d*sc*q - dmin*mn`` per 32 of 256 (6-bit ``sc, mn``)   4 bits, 32; ``rest = 8*d*sc - dmin*mn``
Q5_0    ``d*(q - 16)`` per 32 (5-bit ``q``)                     8 bits, 32; ``q + 112``
Q6_K    ``d*sc*(q - 32)`` per 16 of 256 (6-bit ``q``, int8 ``sc``)  8 bits, 16; ``q + 96``
Q8_0    ``d*q`` per 32 (int8 ``q``)                             8 bits, 32; ``q + 128``
======  ======================================================  ===========================

A block's ``rest`` (the part of an asymmetric block the node cannot hold) is added as
``blocksum(x) @ rest^T``: one small product per projection, the block sums of an input shared by
the projections that read it.

:func:`write_blocks` takes a model that the builder wrote in fp32 with one ``MatMul`` per
projection (``disable_qkv_fusion``) and replaces each projection and the output layer by a
``MatMulNBits`` node holding the file's blocks, and the embedding table by the file's values.
The weights are then exactly the GGUF's; what remains is the kernels' int8 activations.
llama.cpp stores a Llama's query and key rows permuted for its rotary layout; they are put back
in the order transformers (and the builder) use. Qwen2's are stored in order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

RawTensor = tuple[np.ndarray, str]
"""A tensor's raw rows (uint8, one row per output feature) and its GGML type name (``"Q4_K"``, ...)."""
BlockSource = Callable[[str], RawTensor | None]
"""``GGUF tensor name -> raw tensor``, ``None`` when the file has no such tensor."""

_SUPER = 256
_PROJECTIONS = {
    "q_proj": "attn_q",
    "k_proj": "attn_k",
    "v_proj": "attn_v",
    "o_proj": "attn_output",
    "gate_proj": "ffn_gate",
    "up_proj": "ffn_up",
    "down_proj": "ffn_down",
}


LAYOUT_VERSION = 2
"""Changes whenever :func:`write_blocks` writes another graph, so that cached models are rebuilt."""


class NotExactError(ValueError):
    """The checkpoint or the built model is not laid out as this module can write exactly."""


@dataclass(frozen=True)
class Blocks:
    """Quantised rows as ``MatMulNBits`` holds them: ``w = scale * (q - 2**(bits-1)) + rest``.

    Attributes:
        bits: 4 or 8.
        q: ``[rows, blocks, block]`` uint8 in ``0 .. 2**bits - 1``.
        scale: ``[rows, blocks]`` float32.
        rest: ``[rows, blocks]`` float32, or ``None`` for symmetric blocks.
    """

    bits: int
    q: np.ndarray
    scale: np.ndarray
    rest: np.ndarray | None = None

    @property
    def block(self) -> int:
        """Weights per block."""
        return int(self.q.shape[2])

    def dequantize(self) -> np.ndarray:
        """The float32 weights ``[rows, blocks * block]``."""
        w: np.ndarray = self.scale[..., None] * (self.q.astype(np.float32) - 2 ** (self.bits - 1))
        if self.rest is not None:
            w = w + self.rest[..., None]
        return w.reshape(self.q.shape[0], -1)

    def packed(self) -> np.ndarray:
        """``MatMulNBits``'s ``B``: ``[rows, blocks, block * bits / 8]`` uint8, low nibble first."""
        if self.bits == 8:
            return self.q
        packed: np.ndarray = (self.q[..., 0::2] | (self.q[..., 1::2] << 4)).astype(np.uint8)
        return packed


def _f16(raw: np.ndarray) -> np.ndarray:
    """fp16 values stored in the last axis (pairs of bytes) as float32."""
    return np.ascontiguousarray(raw).view(np.float16)[..., 0].astype(np.float32)


def _nibbles(raw: np.ndarray) -> np.ndarray:
    """Bytes ``[..., n]`` as their low nibbles then their high nibbles ``[..., 2n]``."""
    return np.concatenate([raw & 0x0F, raw >> 4], axis=-1)


def q4_1(raw: np.ndarray) -> Blocks:
    """Q4_1 rows: 20 bytes per 32 weights (``d``, ``m``, 16 bytes of nibbles)."""
    b = raw.reshape(raw.shape[0], -1, 20)
    d, m = _f16(b[..., 0:2]), _f16(b[..., 2:4])
    return Blocks(4, _nibbles(b[..., 4:]), d, 8 * d + m)


def q8_0(raw: np.ndarray) -> Blocks:
    """Q8_0 rows: 34 bytes per 32 weights (``d``, 32 int8)."""
    b = raw.reshape(raw.shape[0], -1, 34)
    q = np.ascontiguousarray(b[..., 2:]).view(np.int8).astype(np.int16) + 128
    return Blocks(8, q.astype(np.uint8), _f16(b[..., 0:2]))


def q5_0(raw: np.ndarray) -> Blocks:
    """Q5_0 rows: 22 bytes per 32 weights (``d``, 32 high bits, 16 bytes of low nibbles)."""
    b = raw.reshape(raw.shape[0], -1, 22)
    high = np.unpackbits(np.ascontiguousarray(b[..., 2:6]), axis=-1, bitorder="little")
    q = _nibbles(b[..., 6:]) | (high << 4)
    return Blocks(8, (q + 112).astype(np.uint8), _f16(b[..., 0:2]))


def q4_k(raw: np.ndarray) -> Blocks:
    """Q4_K rows: 144 bytes per 256 weights (``d``, ``dmin``, 12 bytes of 6-bit scales and mins, 128 of nibbles).

    Each 64 weights are one run of 32 bytes: their low nibbles are the first 32 weights, their
    high nibbles the next 32.
    """
    b = raw.reshape(raw.shape[0], -1, 144)
    d, dmin = _f16(b[..., 0:2]), _f16(b[..., 2:4])
    s = b[..., 4:16].astype(np.uint8)
    low = np.concatenate([s[..., 0:4] & 63, (s[..., 8:12] & 0x0F) | ((s[..., 0:4] >> 6) << 4)], axis=-1)
    mins = np.concatenate([s[..., 4:8] & 63, (s[..., 8:12] >> 4) | ((s[..., 4:8] >> 6) << 4)], axis=-1)
    runs = b[..., 16:].reshape(*b.shape[:2], 4, 32)
    q = np.stack([runs & 0x0F, runs >> 4], axis=3).reshape(b.shape[0], -1, 32)  # [rows, 8 * supers, 32]
    scale = (d[..., None] * low.astype(np.float32)).reshape(b.shape[0], -1)
    offset = (dmin[..., None] * mins.astype(np.float32)).reshape(b.shape[0], -1)
    return Blocks(4, q.astype(np.uint8), scale, 8 * scale - offset)


def q6_k(raw: np.ndarray) -> Blocks:
    """Q6_K rows: 210 bytes per 256 weights (128 of low nibbles, 64 of high pairs, 16 int8 scales, ``d``).

    Each half of 128 weights reads 64 low bytes and 32 high bytes: quarter ``j`` takes the low
    (``j`` even) or high nibbles of low bytes ``32*(j//2)`` on, and bits ``2j, 2j+1`` of the high bytes.
    """
    b = raw.reshape(raw.shape[0], -1, 210)
    low = b[..., 0:128].reshape(*b.shape[:2], 2, 2, 32)  # [rows, supers, half, pair of 32 bytes, 32]
    high = b[..., 128:192].reshape(*b.shape[:2], 2, 1, 32)
    quarters = [
        (low[..., j % 2, :] >> (4 * (j // 2)) & 0x0F) | (((high[..., 0, :] >> (2 * j)) & 3) << 4) for j in range(4)
    ]
    q = np.stack(quarters, axis=3).reshape(b.shape[0], -1, 16)  # [rows, 16 * supers, 16]
    sc = np.ascontiguousarray(b[..., 192:208]).view(np.int8).astype(np.float32)
    scale = (_f16(b[..., 208:210])[..., None] * sc).reshape(b.shape[0], -1)
    return Blocks(8, (q.astype(np.int16) + 96).astype(np.uint8), scale)


DECODERS: dict[str, Callable[[np.ndarray], Blocks]] = {
    "Q4_1": q4_1,
    "Q4_K": q4_k,
    "Q5_0": q5_0,
    "Q6_K": q6_k,
    "Q8_0": q8_0,
}
"""The GGML types written exactly, by name."""


def decode(raw: RawTensor, name: str = "tensor") -> Blocks:
    """The :class:`Blocks` of a raw GGUF tensor.

    Raises:
        NotExactError: a GGML type with no exact ``MatMulNBits`` form here.
    """
    rows, kind = raw
    decoder = DECODERS.get(kind)
    if decoder is None:
        raise NotExactError(f"{name} is {kind}; only {', '.join(DECODERS)} are written exactly")
    return decoder(np.asarray(rows, dtype=np.uint8))


def gguf_source(path: Path) -> BlockSource:
    """The tensors of a GGUF file, by name (memory-mapped; nothing is read until asked for)."""
    import gguf

    tensors = {t.name: t for t in gguf.GGUFReader(str(path)).tensors}

    def get(name: str) -> RawTensor | None:
        t = tensors.get(name)
        return None if t is None else (np.asarray(t.data), t.tensor_type.name)

    return get


def gguf_architecture(path: Path) -> str:
    """``general.architecture`` of a GGUF file (``"llama"``, ``"qwen2"``, ...)."""
    import gguf

    field = gguf.GGUFReader(str(path)).fields["general.architecture"]
    return bytes(field.parts[field.data[0]]).decode("utf-8")


def unpermute_rows(x: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's rotary permutation of query/key rows (``reshape(h, 2, r/h/2).swapaxes(1, 2)``)."""
    rows = x.shape[0]
    return x.reshape(heads, rows // heads // 2, 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def _unpermuted(blocks: Blocks, heads: int) -> Blocks:
    rest = None if blocks.rest is None else unpermute_rows(blocks.rest, heads)
    return Blocks(blocks.bits, unpermute_rows(blocks.q, heads), unpermute_rows(blocks.scale, heads), rest)


def _tensor_of(node_name: str) -> str | None:
    """The GGUF tensor behind one of the builder's ``MatMul`` nodes, ``None`` for other nodes."""
    if node_name.startswith("/lm_head/"):
        return "output.weight"
    parts = node_name.split("/")  # "/model/layers.3/attn/q_proj/MatMul"
    if len(parts) == 6 and parts[1] == "model" and parts[2].startswith("layers.") and parts[5] == "MatMul":
        kind = _PROJECTIONS.get(parts[4])
        return None if kind is None else f"blk.{parts[2].removeprefix('layers.')}.{kind}.weight"
    return None


@dataclass(frozen=True)
class Layout:
    """What :func:`write_blocks` needs to know of the model beside its tensors.

    Attributes:
        heads: Attention heads.
        kv_heads: Key/value heads.
        permuted: Whether the file stores query/key rows in llama.cpp's rotary order (Llama does,
            Qwen2 does not).
    """

    heads: int
    kv_heads: int
    permuted: bool = True


def _keep_used(graph: Any, nodes: list[Any], added: list[Any]) -> None:
    """Set the graph's nodes and initializers, without the ones nothing reads any more."""
    while True:
        used = {name for node in nodes for name in node.input} | {o.name for o in graph.output}
        live = [node for node in nodes if any(o in used for o in node.output)]
        if len(live) == len(nodes):
            break
        nodes = live
    kept = [i for i in [*graph.initializer, *added] if i.name in used]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _embedding_lookup(blocks: Blocks, ids: str, out: str) -> tuple[list[Any], list[Any]]:
    """Nodes and tables that look rows up in ``blocks`` and dequantise them: ``ids [b, s] -> out [b, s, hidden]``."""
    from onnx import TensorProto, helper, numpy_helper

    name = "/model/embed_tokens/gguf"
    tables = [numpy_helper.from_array(blocks.packed(), f"{name}/q"), numpy_helper.from_array(blocks.scale, f"{name}/s")]
    if blocks.rest is not None:
        tables.append(numpy_helper.from_array(blocks.rest, f"{name}/rest"))
    consts: dict[str, np.ndarray] = {
        "zero": np.array(2 ** (blocks.bits - 1), np.float32),
        "last": np.array([-1], np.int64),
        "shape": np.array([0, 0, -1], np.int64),
        "block": np.array([0, 0, 0, -1], np.int64),
        "four": np.array(4, np.uint8),
        "low": np.array(15, np.uint8),
    }
    tables += [numpy_helper.from_array(v, f"{name}/{k}") for k, v in consts.items()]
    n = [helper.make_node("Gather", [t.name, ids], [f"{t.name}/rows"], name=f"{t.name}/Gather") for t in tables[:3]]
    q = f"{name}/q/rows"
    if blocks.bits == 4:  # a byte holds two neighbours, the first in its low nibble
        halves = []
        for half, op, arg in (("lo", "BitwiseAnd", "low"), ("hi", "BitShift", "four")):
            extra = {"direction": "RIGHT"} if op == "BitShift" else {}
            n.append(helper.make_node(op, [q, f"{name}/{arg}"], [f"{name}/{half}"], name=f"{name}/{half}", **extra))
            n.append(helper.make_node("Unsqueeze", [f"{name}/{half}", f"{name}/last"], [f"{name}/{half}1"]))
            halves.append(f"{name}/{half}1")
        n.append(helper.make_node("Concat", halves, [f"{name}/pairs"], name=f"{name}/pairs", axis=-1))
        n.append(helper.make_node("Reshape", [f"{name}/pairs", f"{name}/block"], [f"{name}/q4"], name=f"{name}/q4"))
        q = f"{name}/q4"
    n.append(helper.make_node("Cast", [q], [f"{name}/qf"], name=f"{name}/qf", to=TensorProto.FLOAT))
    n.append(helper.make_node("Sub", [f"{name}/qf", f"{name}/zero"], [f"{name}/centred"], name=f"{name}/centred"))
    n.append(helper.make_node("Unsqueeze", [f"{name}/s/rows", f"{name}/last"], [f"{name}/s1"], name=f"{name}/s1"))
    n.append(helper.make_node("Mul", [f"{name}/centred", f"{name}/s1"], [f"{name}/w"], name=f"{name}/w"))
    w = f"{name}/w"
    if blocks.rest is not None:
        n.append(
            helper.make_node("Unsqueeze", [f"{name}/rest/rows", f"{name}/last"], [f"{name}/r1"], name=f"{name}/r1")
        )
        n.append(helper.make_node("Add", [w, f"{name}/r1"], [f"{name}/wr"], name=f"{name}/wr"))
        w = f"{name}/wr"
    n.append(helper.make_node("Reshape", [w, f"{name}/shape"], [out], name=f"{name}/Reshape"))
    return n, tables


def write_blocks(model_dir: Path, source: BlockSource, layout: Layout) -> None:
    """Rewrite ``model_dir/model.onnx`` (built in fp32, one ``MatMul`` per projection) with the GGUF's blocks.

    Raises:
        NotExactError: a tensor has no exact form, or the model is not laid out as expected; the
            model is then left as it was.
    """
    import onnx
    from onnx import helper, numpy_helper

    path = model_dir / "model.onnx"
    model = onnx.load(str(path))
    inits = {i.name: i for i in model.graph.initializer}
    nodes, added, sums = [], [], {}
    embedding = source("token_embd.weight")
    if embedding is None:
        raise NotExactError("the file has no token_embd.weight")
    head = source("output.weight") or embedding  # tied: the embedding is the output layer
    written = 0
    for node in model.graph.node:
        if node.op_type == "Gather" and node.name == "/model/embed_tokens/Gather":
            # The lookup reads the file's blocks of each token's row and dequantises that row only
            # (a tied model's lookup read the output layer's weights, transposed, before).
            lookup, tables = _embedding_lookup(decode(embedding, "token_embd.weight"), node.input[1], node.output[0])
            nodes += lookup
            added += tables
            continue
        tensor = _tensor_of(node.name) if node.op_type == "MatMul" and node.input[1] in inits else None
        if tensor is None:
            nodes.append(node)
            continue
        raw = head if tensor == "output.weight" else source(tensor)
        if raw is None:
            raise NotExactError(f"{node.name}: the file has no {tensor}")
        blocks = decode(raw, tensor)
        if layout.permuted and ".attn_q." in tensor:
            blocks = _unpermuted(blocks, layout.heads)
        elif layout.permuted and ".attn_k." in tensor:
            blocks = _unpermuted(blocks, layout.kv_heads)
        k, n = (int(x) for x in inits[node.input[1]].dims)
        if blocks.q.shape[0] != n or blocks.q.shape[1] * blocks.block != k:
            raise NotExactError(f"{node.name}: {tensor}'s blocks {blocks.q.shape} do not fit K={k}, N={n}")
        base = node.name.removesuffix("/MatMul")
        b = numpy_helper.from_array(blocks.packed(), f"{base}/gguf_q")
        s = numpy_helper.from_array(blocks.scale.astype(np.float32), f"{base}/gguf_scales")
        added += [b, s]
        x, y = node.input[0], node.output[0]
        quantised = helper.make_node(
            "MatMulNBits",
            [x, b.name, s.name],
            [y if blocks.rest is None else f"{y}/gguf_scaled"],
            name=f"{base}/MatMulNBits",
            domain="com.microsoft",
            K=k,
            N=n,
            bits=blocks.bits,
            block_size=blocks.block,
            accuracy_level=4,
        )
        nodes.append(quantised)
        written += 1
        if blocks.rest is None:
            continue
        key = (x, blocks.block)
        if key not in sums:
            split_shape = np.array([0, 0, k // blocks.block, blocks.block], np.int64)
            shape = numpy_helper.from_array(split_shape, f"{x}/gguf_blocks{blocks.block}")
            axis = numpy_helper.from_array(np.array([-1], dtype=np.int64), f"{x}/gguf_axis{blocks.block}")
            added += [shape, axis]
            split, total = f"{x}/gguf_split{blocks.block}", f"{x}/gguf_sum{blocks.block}"
            nodes.append(helper.make_node("Reshape", [x, shape.name], [split], name=split))
            nodes.append(helper.make_node("ReduceSum", [split, axis.name], [total], name=total, keepdims=0))
            sums[key] = total
        rest = numpy_helper.from_array(np.ascontiguousarray(blocks.rest.T, dtype=np.float32), f"{base}/gguf_rest")
        added.append(rest)
        nodes.append(helper.make_node("MatMul", [sums[key], rest.name], [f"{y}/gguf_rest"], name=f"{base}/rest"))
        nodes.append(helper.make_node("Add", [f"{y}/gguf_scaled", f"{y}/gguf_rest"], [y], name=f"{base}/add"))
    if not written:
        raise NotExactError("the model has no projection this module knows")
    _keep_used(model.graph, nodes, added)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    data = path.with_name("model.onnx.data")
    data.unlink()
    onnx.save(model, str(path), save_as_external_data=True, location=data.name, all_tensors_to_one_file=True)
