"""Write a GGUF checkpoint's own 4- and 8-bit blocks into an ONNX Runtime GenAI model, bit for bit.

SmolLM2 ships as a GGUF file whose projections are Q4_1 (blocks of 32 weights ``w = d*q + m``, a
4-bit ``q``, an fp16 scale ``d`` and minimum ``m``) and whose tied embedding is Q8_0 (``w = d*q``,
an 8-bit ``q``). The ONNX model builder starts from the dequantised fp32 weights and quantises them
again, which costs a quarter of fp32's greedy tokens (74% agreement, ``docs/benchmarks.md``). Here
the shipped blocks are written straight into the builder's ``MatMulNBits`` nodes instead:

* a Q4_1 block's ``q`` and ``d`` become the node's 4-bit weights and scale. The node computes
  ``d*(q - 8)``; the rest, ``8d + m`` per block, is added as ``blocksum(x) @ (8d + m)^T``: one
  small product per node, with the block sums of an input shared by the nodes that read it;
* the Q8_0 embedding becomes an 8-bit ``MatMulNBits`` output layer (``q + 128`` with its implicit
  zero point of 128), which the tied embedding lookup reads too;
* llama.cpp stores the query and key rows permuted for its rotary layout; they are put back in
  the order transformers (and the builder) use.

The weights are then exactly the GGUF's. What remains is the kernels' int8 activations.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

BLOCK = 32
Q4_1_BYTES, Q8_0_BYTES = 20, 34

RawTensor = tuple[np.ndarray, str]
"""A tensor's raw rows (uint8, one row per output feature) and its GGML type name (``"Q4_1"``, ...)."""
BlockSource = Callable[[str], RawTensor | None]
"""``GGUF tensor name -> raw tensor``, ``None`` when the file has no such tensor."""

_PROJECTIONS = {"o_proj": "attn_output", "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


class NotExactError(ValueError):
    """The checkpoint or the built model is not laid out as this module can write exactly."""


def gguf_source(path: Path) -> BlockSource:
    """The tensors of a GGUF file, by name."""
    import gguf

    tensors = {t.name: t for t in gguf.GGUFReader(str(path)).tensors}

    def get(name: str) -> RawTensor | None:
        t = tensors.get(name)
        return None if t is None else (np.asarray(t.data), t.tensor_type.name)

    return get


def q4_1(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(q [rows, blocks, 32] uint8, d [rows, blocks], m [rows, blocks])`` of Q4_1 rows."""
    blocks = raw.reshape(raw.shape[0], -1, Q4_1_BYTES)
    d = blocks[:, :, 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    m = blocks[:, :, 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    nibbles = blocks[:, :, 4:]
    return np.concatenate([nibbles & 0x0F, nibbles >> 4], axis=-1), d, m


def q8_0(raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(q [rows, blocks, 32] int8, d [rows, blocks])`` of Q8_0 rows."""
    blocks = raw.reshape(raw.shape[0], -1, Q8_0_BYTES)
    d = blocks[:, :, 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    return blocks[:, :, 2:].copy().view(np.int8), d


def unpermute_rows(x: np.ndarray, heads: int) -> np.ndarray:
    """Undo llama.cpp's rotary permutation of query/key rows (``reshape(h, 2, r/h/2).swapaxes(1, 2)``)."""
    rows = x.shape[0]
    return x.reshape(heads, rows // heads // 2, 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def _need(source: BlockSource, name: str, kind: str) -> np.ndarray:
    found = source(name)
    if found is None or found[1] != kind:
        raise NotExactError(f"{name} is {found[1] if found else 'missing'}, not {kind}")
    return found[0]


def _projection(source: BlockSource, node: str, heads: int, kv_heads: int) -> tuple[np.ndarray, ...]:
    """(q, d, m) of the GGUF rows behind one of the builder's projection nodes, in its row order."""
    layer = int(node.split("layers.")[1].split("/")[0])
    if "qkv_proj" in node:
        parts = [q4_1(_need(source, f"blk.{layer}.attn_{x}.weight", "Q4_1")) for x in "qkv"]
        rotary = {0: heads, 1: kv_heads}  # the value rows are stored in order

        def rows(part: int, a: np.ndarray) -> np.ndarray:
            return unpermute_rows(a, rotary[part]) if part in rotary else a

        return tuple(np.concatenate([rows(j, p[i]) for j, p in enumerate(parts)]) for i in range(3))
    kind = _PROJECTIONS.get(node.split("/")[-2])
    if kind is None:
        raise NotExactError(f"no GGUF tensor known for {node}")
    return q4_1(_need(source, f"blk.{layer}.{kind}.weight", "Q4_1"))


def write_blocks(model_dir: Path, source: BlockSource, *, heads: int, kv_heads: int) -> None:
    """Rewrite ``model_dir/model.onnx`` (built with only ``MatMul`` quantised) with the GGUF's blocks.

    Raises:
        NotExactError: a tensor is not Q4_1/Q8_0, or the model is not laid out as expected; the
            model is then left as it was.
    """
    import onnx
    from onnx import helper, numpy_helper

    path = model_dir / "model.onnx"
    model = onnx.load(str(path))
    inits = {i.name: i for i in model.graph.initializer}
    nodes, added, sums = [], [], {}
    head_q, head_d = q8_0(_need(source, "token_embd.weight", "Q8_0"))
    tied = False
    for node in model.graph.node:
        attrs = {a.name: a for a in node.attribute}
        if node.op_type == "GatherBlockQuantized" and "embed_tokens" in node.name:
            attrs["bits"].i, tied = 8, True
        elif node.op_type == "Reshape" and node.name.endswith("embed_tokens/Reshape"):
            shape = numpy_helper.from_array(
                np.array([head_q.shape[0], head_q.shape[1] * BLOCK], dtype=np.int64), f"{node.name}/gguf_rows"
            )
            added.append(shape)
            node.input[1] = shape.name  # 8-bit rows now: the builder's constant described 4-bit ones
        elif node.op_type == "MatMulNBits" and "lm_head" in node.name:
            attrs["bits"].i = 8
            weights = (head_q.astype(np.int16) + 128).astype(np.uint8)
            inits[node.input[1]].CopyFrom(numpy_helper.from_array(weights, node.input[1]))
            inits[node.input[2]].CopyFrom(numpy_helper.from_array(head_d, node.input[2]))
        elif node.op_type == "MatMulNBits":
            q, d, m = _projection(source, node.name, heads, kv_heads)
            if q.shape[0] != attrs["N"].i or q.shape[1] * BLOCK != attrs["K"].i or attrs["block_size"].i != BLOCK:
                raise NotExactError(f"{node.name}: GGUF blocks {q.shape} do not fit N={attrs['N'].i}, K={attrs['K'].i}")
            packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
            inits[node.input[1]].CopyFrom(numpy_helper.from_array(packed, node.input[1]))
            inits[node.input[2]].CopyFrom(numpy_helper.from_array(d, node.input[2]))
            x, y = node.input[0], node.output[0]
            if x not in sums:
                blocks = numpy_helper.from_array(
                    np.array([0, 0, q.shape[1], BLOCK], dtype=np.int64), f"{x}/gguf_blocks"
                )
                axis = numpy_helper.from_array(np.array([-1], dtype=np.int64), f"{x}/gguf_axis")
                added += [blocks, axis]
                nodes.append(helper.make_node("Reshape", [x, blocks.name], [f"{x}/gguf_split"], name=f"{x}/gguf_split"))
                nodes.append(
                    helper.make_node("ReduceSum", [f"{x}/gguf_split", axis.name], [f"{x}/gguf_sum"], keepdims=0)
                )
                sums[x] = f"{x}/gguf_sum"
            rest = numpy_helper.from_array((8 * d + m).T.astype(np.float32).copy(), f"{node.name}/gguf_rest")
            added.append(rest)
            node.output[0] = f"{y}/gguf_scaled"
            nodes.append(node)
            nodes.append(helper.make_node("MatMul", [sums[x], rest.name], [f"{y}/gguf_rest"], name=f"{node.name}/rest"))
            nodes.append(helper.make_node("Add", [f"{y}/gguf_scaled", f"{y}/gguf_rest"], [y], name=f"{node.name}/add"))
            continue
        nodes.append(node)
    if not tied:
        raise NotExactError("the model's embedding is not the output layer's blocks (untied embeddings)")
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    model.graph.initializer.extend(added)
    data = path.with_name("model.onnx.data")
    data.unlink()
    onnx.save(model, str(path), save_as_external_data=True, location=data.name, all_tensors_to_one_file=True)
