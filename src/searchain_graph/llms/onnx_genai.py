"""ONNX Runtime GenAI: a transformers checkpoint with int4 or int8 weights, fused CPU kernels and kept prefixes.

For checkpoints that are not GGUF files (a model directory, a hub name), which llama.cpp does not
read: ONNX Runtime GenAI runs the whole decoder as one graph with fused attention and 4- or 8-bit
weights (``MatMulNBits``), several times faster than fp32 through PyTorch on a CPU. The
conversion starts from the checkpoint's fp32 weights (a GGUF file is dequantised first, which
holds an fp32 copy in memory: GGUF files run on ``llama.cpp`` by default). Its wheels are prebuilt
for Linux, macOS and Windows: no compile step.

* :func:`build_genai_model` converts a transformers checkpoint with onnxruntime-genai's own model
  builder, in a subprocess, into a directory written aside and renamed when complete.
* :class:`GenAIDecoder` decodes greedily and keeps a few generators alive between calls: a new
  prompt continues the kept generator whose tokens share the longest prefix with it (``rewind_to``),
  so the few-shot demonstration every Chain-of-Query prompt starts with is prefilled once per
  process, not once per call.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.llamacpp import DecoderStats, default_threads
from searchain_graph.llms.sampling import sample_token
from searchain_graph.llms.weights import cache_root, content_key, dequantized_dir, load_transformers, save_dequantized

logger = logging.getLogger(__name__)

# int4 weights in blocks of 32, int8 activations in the products (accuracy level 4), and logits for
# the last prompt position only during prefill.
_BUILDER_INT4 = ["-p", "int4", "--extra_options", "int4_accuracy_level=4", "prune_lm_head=true"]

GENAI_PRECISIONS: dict[str, list[str]] = {
    "int4": _BUILDER_INT4,
    "int8": ["-p", "int8", "--extra_options", "prune_lm_head=true"],
    "fp32": ["-p", "fp32", "--extra_options", "prune_lm_head=true"],
}
"""The precisions :func:`build_genai_model` offers, with the builder's options for each."""

KEPT_PREFIXES = 3
"""Generators :class:`GenAIDecoder` keeps alive between calls by default (``SEARCHAIN_KEPT_PREFIXES``
overrides it): each holds a KV cache of ``max_length`` tokens (about 180 MB for the 1.5B at 3,072)."""

MIN_SUFFIX = 2
"""Tokens always prefilled anew after a kept prefix. ONNX Runtime computes one new token with
other kernels than several, so re-reading at least two keeps a reused prefix bit-identical to a
cold prefill."""


class GenAIUnavailableError(RuntimeError):
    """onnxruntime-genai is not installed, or could not convert the model; the message says which."""


def import_genai() -> Any:
    """The ``onnxruntime_genai`` module.

    Raises:
        GenAIUnavailableError: it is not installed.
    """
    try:
        import onnxruntime_genai
    except ImportError as exc:  # pragma: no cover - it is a dependency
        raise GenAIUnavailableError(
            "the ONNX backend needs onnxruntime-genai: `pip install onnxruntime-genai onnx onnx-ir`, "
            "or choose backend='torch'"
        ) from exc
    return onnxruntime_genai


def build_genai_model(
    source: Path,
    target: Path,
    *,
    precision: str = "int4",
    timeout: float = 1800,
) -> Path:
    """Convert the transformers checkpoint at ``source`` into an ONNX Runtime GenAI model at ``target``.

    Nothing is done when ``target`` already holds a model. The conversion writes into a sibling
    directory and renames it, so an interrupted build never leaves a half-written model.

    Raises:
        ValueError: an unknown precision.
        GenAIUnavailableError: the builder failed (its last output lines are in the message).
    """
    if precision not in GENAI_PRECISIONS:
        raise ValueError(f"unknown ONNX precision {precision!r}: use one of {', '.join(GENAI_PRECISIONS)}")
    if (target / "genai_config.json").is_file():
        return target
    import_genai()
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}.partial-"))
    try:
        out, scratch = work / "model", work / "scratch"
        command = [sys.executable, "-m", "onnxruntime_genai.models.builder", "-i", str(source), "-o", str(out)]
        command += ["-e", "cpu", "-c", str(scratch), *GENAI_PRECISIONS[precision]]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
        if done.returncode != 0 or not (out / "genai_config.json").is_file():
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise GenAIUnavailableError(f"onnxruntime-genai could not convert {source}:\n{tail}")
        try:
            os.replace(out, target)
        except OSError:
            if not (target / "genai_config.json").is_file():  # not a concurrent build that won
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def kept_prefixes() -> int:
    """``$SEARCHAIN_KEPT_PREFIXES`` (a whole number, 0 or more), else :data:`KEPT_PREFIXES`.

    Raises:
        ValueError: the variable is set to something else.
    """
    raw = os.environ.get("SEARCHAIN_KEPT_PREFIXES", "").strip()
    if not raw:
        return KEPT_PREFIXES
    if not (raw.isascii() and raw.isdigit()):
        raise ValueError(f"SEARCHAIN_KEPT_PREFIXES must be a whole number of generators, got {raw!r}")
    return int(raw)


@dataclass
class _Kept:
    generator: Any
    tokens: list[int]
    capacity: int


class GenAIDecoder:
    """Greedy decoding on an ONNX Runtime GenAI model, with kept prompt prefixes.

    Args:
        model_dir: A directory written by :func:`build_genai_model`.
        eos_ids: Token ids that end a reply (not returned).
        keep: Generators kept alive between calls (each holds a KV cache of ``max_length``);
            ``None``: ``$SEARCHAIN_KEPT_PREFIXES``, else :data:`KEPT_PREFIXES`.
        max_length: Tokens a kept generator can hold (prompt and reply); ``None``: the model's
            context length, at most 3072. A longer call gets a generator of its own.
        threads: Threads of ONNX Runtime's operators; ``None``: :func:`default_threads`. (Left to
            itself, ONNX Runtime GenAI runs this model on one thread: 47 tokens/s here against 70
            with both cores.)
    """

    def __init__(
        self,
        model_dir: str | Path,
        *,
        eos_ids: Sequence[int],
        keep: int | None = None,
        max_length: int | None = None,
        threads: int | None = None,
    ) -> None:
        og = import_genai()
        self._og = og
        self.model_dir = Path(model_dir)
        self.threads = threads or default_threads()
        config = og.Config(str(model_dir))
        config.overlay(json.dumps({"model": {"decoder": {"session_options": {"intra_op_num_threads": self.threads}}}}))
        self.model = og.Model(config)
        self.eos_ids = frozenset(int(i) for i in eos_ids)
        self.keep = max(0, kept_prefixes() if keep is None else keep)
        config = json.loads((Path(model_dir) / "genai_config.json").read_text(encoding="utf-8"))
        context = int(config.get("model", {}).get("context_length") or 4096)
        self.max_length = max_length or min(context, 3072)
        self.context = context
        self._kept: list[_Kept] = []
        self._lock = threading.Lock()
        self.stats = DecoderStats()

    def _new(self, capacity: int) -> Any:
        params = self._og.GeneratorParams(self.model)
        params.set_search_options(max_length=capacity, do_sample=False)
        return self._og.Generator(self.model, params)

    def _start(self, ids: list[int], budget: int) -> tuple[_Kept, int]:
        """A generator holding ``ids``: a kept one continued from its longest shared prefix, or a new one."""
        best, shared = None, 0
        for kept in self._kept:
            if len(ids) + budget > kept.capacity:
                continue
            n = 0
            limit = min(len(kept.tokens), len(ids) - MIN_SUFFIX)
            while n < limit and kept.tokens[n] == ids[n]:
                n += 1
            if n > shared:
                best, shared = kept, n
        if best is not None:
            self._kept.remove(best)
            best.generator.rewind_to(shared)
            best.generator.append_tokens(ids[shared:])
        else:
            capacity = self.max_length if len(ids) + budget <= self.max_length else len(ids) + budget
            best = _Kept(self._new(capacity), [], capacity)
            best.generator.append_tokens(ids)
        self.stats.calls += 1
        self.stats.prompt_tokens += len(ids)
        self.stats.reused_tokens += shared
        self.stats.per_call_reuse.append(shared)
        return best, shared

    def _keep(self, kept: _Kept) -> None:
        if self.keep and kept.capacity == self.max_length:
            self._kept.insert(0, kept)
            del self._kept[self.keep :]

    def generate(
        self,
        ids: Sequence[int],
        max_new_tokens: int,
        *,
        stop: Callable[[list[int]], bool] | None = None,
        logprobs: bool = False,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> tuple[list[int], list[float], str]:
        """Reply to ``ids``: (new token ids without EOS, their log-probabilities, finish reason).

        Args:
            ids: The prompt's token ids (at least one).
            max_new_tokens: Most tokens generated.
            stop: Called with the new ids after each token; ``True`` ends the reply (finish "stop").
            logprobs: Compute each generated token's log-probability.
            temperature: 0 decodes greedily; above 0 samples
                (:func:`~searchain_graph.llms.sampling.sample_token`), from a kept prefix too.
            seed: Makes a sampled reply reproducible.
        """
        if not ids:
            raise ValueError("the prompt is empty")
        prompt = [int(i) for i in ids]
        with self._lock:
            kept, _ = self._start(prompt, max_new_tokens)
            gen = kept.generator
            new_ids: list[int] = []
            lps: list[float] = []
            finish = "length"
            # An exception leaves the generator in an unknown state: it is not kept then.
            rng = np.random.default_rng(seed) if temperature > 0 else None
            while len(new_ids) < max_new_tokens and not gen.is_done():
                logits = np.asarray(gen.get_logits())[0, -1].astype(np.float64) if logprobs or rng else None
                if rng is not None and logits is not None:  # sampled here; the generator only computes
                    token = sample_token(logits, temperature, rng)
                    if token not in self.eos_ids and len(new_ids) + 1 < max_new_tokens:
                        gen.append_tokens([token])
                else:
                    gen.generate_next_token()
                    token = int(gen.get_next_tokens()[0])
                if token in self.eos_ids:
                    finish = "stop"
                    break
                new_ids.append(token)
                if logits is not None:
                    top = float(logits.max())
                    lps.append(float(logits[token] - top - np.log(np.exp(logits - top).sum())))
                if stop is not None and stop(new_ids):
                    finish = "stop"
                    break
            # The last token chosen may not have been run through the model yet: a later call
            # reuses the prefix up to the one before it.
            kept.tokens = (prompt + new_ids)[:-1]
            self._keep(kept)
        return new_ids, lps, finish

    def forced_logits(self, prompt: Sequence[int], continuation: Sequence[int]) -> np.ndarray:
        """Teacher forcing: row ``i`` holds the logits of the token after ``prompt + continuation[:i]``.

        Used to compare the model with a reference model token by token, along the same text.
        """
        with self._lock:
            gen = self._new(len(prompt) + len(continuation) + 1)
            gen.append_tokens([int(i) for i in prompt])
            rows = []
            for token in continuation:
                rows.append(np.asarray(gen.get_logits())[0, -1].astype(np.float32))
                gen.append_tokens([int(token)])
        return np.stack(rows) if rows else np.zeros((0, 0), dtype=np.float32)


def load_genai(model_path: str, gguf_file: str | None, precision: str) -> tuple[Any, GenAIDecoder]:
    """The tokenizer and a :class:`GenAIDecoder` for a checkpoint, converting it once (cached).

    A GGUF file is first dequantised (:mod:`~searchain_graph.llms.weights`; an fp32 copy of the
    model, in memory and in the cache); a hub name is saved to the cache, since the converter reads
    a checkpoint on disk. The builder then quantises the fp32 weights to ``precision``.

    Raises:
        ModelNotFoundError: the checkpoint cannot be found, or its copy cannot be written.
        GenAIUnavailableError: onnxruntime-genai is missing or cannot convert it.
    """
    from transformers import AutoTokenizer

    if gguf_file:
        source = dequantized_dir(Path(model_path) / gguf_file)
    elif Path(model_path).is_dir():
        source = Path(model_path)
    else:  # a hub name: the converter needs the checkpoint on disk
        source = cache_root() / "transformers" / model_path.replace("/", "--")
    if not (source / "config.json").is_file():
        tokenizer, model, local = load_transformers(model_path, gguf_file)
        if local is None and not save_dequantized(model, tokenizer, source):
            raise ModelNotFoundError(f"cannot write {source}, which the ONNX conversion needs")
        del model
    tokenizer = AutoTokenizer.from_pretrained(source)
    key = content_key(source)
    target = build_genai_model(source, cache_root() / "onnx" / f"{source.name}-{precision}-{key}", precision=precision)
    eos = {tokenizer.eos_token_id} - {None}
    generation = source / "generation_config.json"
    if generation.is_file():
        ids = json.loads(generation.read_text(encoding="utf-8")).get("eos_token_id")
        eos |= set(ids if isinstance(ids, list) else [ids]) - {None}
    return tokenizer, GenAIDecoder(target, eos_ids=sorted(eos))
