"""Continuous batching for a local causal LM: many concurrent chat calls, one decode loop.

A 135M model on a CPU spends most of each decoding step on overhead and weight reads that do
not grow with the batch: eight sequences decode about four times faster together than one
after another. :class:`BatchEngine` exploits that when several callers (the evaluation
harness's threads, a LangGraph server's requests) use one :class:`~searchain_graph.llms.chat_model.
TransformersChatModel` at once:

* each request is **prefilled alone**, without padding, so a long prompt never makes a short
  one pay for its length;
* its key/value cache then **joins the running batch** at the next step (left-padded to the
  batch's length and masked), and it leaves as soon as it ends, so a short request never waits
  for a long one (continuous batching);
* the cache grows into preallocated buffers (capacity doubling), not by concatenation, so a
  step costs no copy of the whole cache;
* the key/value cache of recent prompts is kept (up to ``prefix_cache_bytes``), and a new
  prompt that starts with the same tokens as one of them (the same few-shot demonstrations, a
  conversation's earlier turns, a question asked by several methods) prefills only the rest;
* decoding is greedy. Each row stops at EOS, its own ``max_new_tokens`` or its own stop
  strings, and can return log-probabilities.

Rows are decoded with explicit position ids, so left padding changes no position. A batch's
arithmetic is not bit-identical to a lone sequence's (the matrix shapes differ), so a greedy
choice between two near-tied tokens can differ from sequential decoding; the benchmark
``benchmarks/batching.py`` counts how often.
"""

from __future__ import annotations

import inspect
import logging
import queue
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from searchain_graph.llms.sampling import repeats_at_end

logger = logging.getLogger(__name__)


@dataclass
class GenerationRequest:
    """One prompt to complete, and (once done) its completion.

    Attributes:
        input_ids: The prompt's token ids.
        max_new_tokens: Most tokens to generate.
        stop: Stop strings; generation ends once the text contains one.
        stop_repeats: Generation ends once the new ids end with one run repeated this many times
            (:func:`~searchain_graph.llms.sampling.repeats_at_end`).
        logprobs: Keep each generated token's log-probability.
        new_ids: Generated ids (EOS excluded), filled in by the engine.
        token_logprobs: Log-probability of each id in ``new_ids`` when ``logprobs`` is set.
        finish_reason: ``"stop"`` (EOS or a stop string) or ``"length"``.
    """

    input_ids: list[int]
    max_new_tokens: int
    stop: list[str] = field(default_factory=list)
    logprobs: bool = False
    stop_repeats: int = 0
    new_ids: list[int] = field(default_factory=list)
    token_logprobs: list[float] = field(default_factory=list)
    finish_reason: str = "length"
    error: BaseException | None = None
    done: threading.Event = field(default_factory=threading.Event)


def _growing_layer_class() -> type:
    """A ``DynamicLayer`` that appends into preallocated buffers instead of concatenating."""
    import torch
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):  # type: ignore[no-untyped-call]
        def __init__(self, keys: torch.Tensor, values: torch.Tensor) -> None:
            super().__init__()  # type: ignore[no-untyped-call]
            self.dtype, self.device = keys.dtype, keys.device
            self.is_initialized = True
            self._set(keys, values, extra=64)

        def _set(self, keys: torch.Tensor, values: torch.Tensor, extra: int) -> None:
            b, h, n, d = keys.shape
            self._kbuf = keys.new_zeros((b, h, n + extra, d))
            self._vbuf = values.new_zeros((b, values.shape[1], n + extra, values.shape[3]))
            self._kbuf[:, :, :n] = keys
            self._vbuf[:, :, :n] = values
            self._len = n
            self.keys, self.values = self._kbuf[:, :, :n], self._vbuf[:, :, :n]

        def update(
            self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
        ) -> tuple[torch.Tensor, torch.Tensor]:
            new = key_states.shape[-2]
            if self._len + new > self._kbuf.shape[-2]:
                n = self._len
                self._set(self._kbuf[:, :, :n], self._vbuf[:, :, :n], extra=max(64, n + new))
            self._kbuf[:, :, self._len : self._len + new] = key_states
            self._vbuf[:, :, self._len : self._len + new] = value_states
            self._len += new
            self.keys, self.values = self._kbuf[:, :, : self._len], self._vbuf[:, :, : self._len]
            return self.keys, self.values

    return GrowingLayer


class BatchEngine:
    """Serve :class:`GenerationRequest` objects from many threads with one decode loop.

    Args:
        model: A transformers causal LM (already loaded, in eval mode).
        tokenizer: Its tokenizer (used to detect stop strings).
        max_batch_size: Most sequences decoded together.
        prefix_cache_bytes: Memory kept for recent prompts' key/value caches (0 turns prefix
            reuse off).
        min_prefix: Shortest shared prefix, in tokens, worth reusing.

    The loop runs in a daemon thread, started on the first :meth:`submit`.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        max_batch_size: int = 8,
        prefix_cache_bytes: int = 1 << 30,
        min_prefix: int = 16,
    ) -> None:
        if max_batch_size < 1:
            raise ValueError(f"max_batch_size must be at least 1, got {max_batch_size}")
        if prefix_cache_bytes < 0:
            raise ValueError(f"prefix_cache_bytes must be at least 0, got {prefix_cache_bytes}")
        try:
            from transformers.cache_utils import Cache, DynamicLayer  # noqa: F401
        except ImportError as exc:  # transformers 4.x keeps no per-layer cache objects
            raise RuntimeError("max_batch_size > 1 needs transformers >= 5; use max_batch_size=1") from exc
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch_size = max_batch_size
        # transformers 5.x renames the forward's past_key_values to cache (the old name goes in 5.40).
        forward = inspect.signature(model.forward).parameters
        self._cache_arg = "cache" if "cache" in forward else "past_key_values"
        eos = getattr(model.generation_config, "eos_token_id", None)
        if eos is None:
            eos = tokenizer.eos_token_id
        self.eos: set[int] = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        self._queue: queue.Queue[GenerationRequest] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self.prefix_cache_bytes = prefix_cache_bytes
        self.min_prefix = max(1, min_prefix)
        self._prefixes: OrderedDict[bytes, tuple[np.ndarray, list[Any], int]] = OrderedDict()
        self._prefix_bytes = 0
        self.steps = 0  # decode steps run, for benchmarks
        self.rows = 0  # sum over steps of the batch size
        self.prompt_tokens = 0  # prompt tokens seen
        self.reused_tokens = 0  # of which taken from the prefix cache

    def submit(self, request: GenerationRequest) -> GenerationRequest:
        """Complete ``request`` (blocking) and return it.

        Raises:
            BaseException: whatever the model raised while serving this request.
        """
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="searchain-batch-engine", daemon=True)
                self._thread.start()
        self._queue.put(request)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request

    # -- the loop ----------------------------------------------------------------------------------
    def _loop(self) -> None:
        import torch

        layer_cls = _growing_layer_class()
        rows: list[GenerationRequest] = []
        cache: Any = None
        mask: torch.Tensor | None = None  # (rows, cache length), 1 = real token
        positions: list[int] = []
        last: list[int] = []
        while True:
            waiting: list[GenerationRequest] = []
            if not rows:
                waiting.append(self._queue.get())  # idle: block until work arrives
            while len(rows) + len(waiting) < self.max_batch_size:
                try:
                    waiting.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                with torch.inference_mode():
                    for request in waiting:
                        try:
                            joined = self._prefill(request, layer_cls)
                        except Exception as exc:  # this prompt alone fails; the batch goes on
                            request.error = exc
                            request.done.set()
                            continue
                        if joined is None:
                            continue
                        kv, token = joined
                        cache, mask = self._join(cache, mask, kv, layer_cls)
                        rows.append(request)
                        positions.append(len(request.input_ids))
                        last.append(token)
                    if rows:
                        keep, mask = self._step(rows, cache, mask, positions, last)
                        if len(keep) < len(rows):
                            cache, mask, rows, positions, last = self._drop(cache, mask, rows, positions, last, keep)
            except BaseException as exc:  # a failed step fails every row in flight; keep serving
                logger.exception("batched generation failed")
                for request in rows + waiting:
                    if not request.done.is_set():
                        request.error = exc
                        request.done.set()
                rows, cache, mask, positions, last = [], None, None, [], []

    def _prefill(self, request: GenerationRequest, layer_cls: type) -> tuple[list[Any], int] | None:
        """Run the prompt alone, reusing a cached prefix.

        Returns:
            Its per-layer (keys, values) and first token, or ``None`` when that token already
            ends the request.
        """
        import torch
        from transformers.cache_utils import Cache

        ids = np.asarray(request.input_ids, dtype=np.int64)
        reuse, cached = self._longest_prefix(ids)
        past = None
        if cached is not None:
            past = Cache(layers=[layer_cls(k[:, :, :reuse], v[:, :, :reuse]) for k, v in cached])
        out = self.model(
            input_ids=torch.from_numpy(ids[reuse:]).unsqueeze(0),
            use_cache=True,
            logits_to_keep=1,
            **{self._cache_arg: past},
        )
        kv = [(layer.keys, layer.values) for layer in _cache_of(out).layers]
        if past is not None:  # views into growable buffers: keep exact copies
            kv = [(k.clone(), v.clone()) for k, v in kv]
        self.prompt_tokens += len(ids)
        self.reused_tokens += reuse
        self._remember(ids, kv)
        token = self._accept(request, out.logits[0, -1])
        if token is None:
            return None
        return kv, token

    def _longest_prefix(self, ids: np.ndarray) -> tuple[int, list[Any] | None]:
        """The longest cached prompt prefix shared with ``ids`` (at most all but its last token)."""
        best, best_kv, best_key = 0, None, b""
        for key, (tokens, kv, _) in self._prefixes.items():
            n = min(len(tokens), len(ids) - 1)
            if n <= best:
                continue
            differ = np.flatnonzero(tokens[:n] != ids[:n])
            shared = int(differ[0]) if differ.size else n
            if shared > best:
                best, best_kv, best_key = shared, kv, key
        if best < self.min_prefix or best_kv is None:
            return 0, None
        self._prefixes.move_to_end(best_key)
        return best, best_kv

    def _remember(self, ids: np.ndarray, kv: list[Any]) -> None:
        """Keep this prompt's cache for later prompts that share its prefix (LRU, bounded)."""
        size = sum(k.element_size() * k.nelement() + v.element_size() * v.nelement() for k, v in kv)
        if len(ids) < self.min_prefix or size > self.prefix_cache_bytes:
            return
        key = ids.tobytes()
        if key in self._prefixes:
            self._prefixes.move_to_end(key)
            return
        self._prefixes[key] = (ids, kv, size)
        self._prefix_bytes += size
        while self._prefix_bytes > self.prefix_cache_bytes:
            _, (_, _, dropped) = self._prefixes.popitem(last=False)
            self._prefix_bytes -= dropped

    def _accept(self, request: GenerationRequest, logits: Any) -> int | None:
        """Take the greedy token for ``request``; return it, or ``None`` once the request is done."""
        import torch

        token = int(torch.argmax(logits))
        if token in self.eos:
            request.finish_reason = "stop"
            request.done.set()
            return None
        request.new_ids.append(token)
        if request.logprobs:
            request.token_logprobs.append(float(torch.log_softmax(logits.float(), dim=-1)[token]))
        if request.stop or request.stop_repeats:
            text = self.tokenizer.decode(request.new_ids[-64:], skip_special_tokens=True) if request.stop else ""
            if any(s in text for s in request.stop) or repeats_at_end(request.new_ids, request.stop_repeats):
                request.finish_reason = "stop"
                request.done.set()
                return None
        if len(request.new_ids) >= request.max_new_tokens:
            request.finish_reason = "length"
            request.done.set()
            return None
        return token

    @staticmethod
    def _join(cache: Any, mask: Any, kv: list[Any], layer_cls: type) -> tuple[Any, Any]:
        """Add one prefilled sequence to the batch cache, left-padding whichever side is shorter."""
        import torch
        from transformers.cache_utils import Cache

        new_len = kv[0][0].shape[-2]
        if cache is None:
            layers = [layer_cls(k, v) for k, v in kv]
            return Cache(layers=layers), torch.ones((1, new_len), dtype=torch.long)
        old_len = mask.shape[1]
        width = max(old_len, new_len)

        def pad(t: torch.Tensor, n: int) -> torch.Tensor:
            if n == 0:
                return t
            shape = list(t.shape)
            shape[-2] = n
            return torch.cat([t.new_zeros(shape), t], dim=-2)

        layers = []
        for layer, (k, v) in zip(cache.layers, kv, strict=True):
            keys = torch.cat([pad(layer.keys, width - old_len), pad(k, width - new_len)], dim=0)
            values = torch.cat([pad(layer.values, width - old_len), pad(v, width - new_len)], dim=0)
            layers.append(layer_cls(keys, values))
        old_mask = torch.cat([mask.new_zeros((mask.shape[0], width - old_len)), mask], dim=1)
        new_mask = torch.cat([mask.new_zeros((1, width - new_len)), mask.new_ones((1, new_len))], dim=1)
        return Cache(layers=layers), torch.cat([old_mask, new_mask], dim=0)

    def _step(
        self, rows: list[GenerationRequest], cache: Any, mask: Any, positions: list[int], last: list[int]
    ) -> tuple[list[int], Any]:
        """Decode one token for every row; return the rows still running and the grown mask."""
        import torch

        length = mask.shape[1]
        mask = torch.cat([mask, mask.new_ones((len(rows), 1))], dim=1)
        out = self.model(
            input_ids=torch.tensor(last, dtype=torch.long).unsqueeze(1),
            attention_mask=mask,
            position_ids=torch.tensor(positions, dtype=torch.long).unsqueeze(1),
            cache_position=torch.tensor([length], dtype=torch.long),
            use_cache=True,
            **{self._cache_arg: cache},
        )
        self.steps += 1
        self.rows += len(rows)
        keep = []
        for i, request in enumerate(rows):
            positions[i] += 1
            token = self._accept(request, out.logits[i, -1])
            if token is not None:
                last[i] = token
                keep.append(i)
        return keep, mask

    @staticmethod
    def _drop(
        cache: Any, mask: Any, rows: list[GenerationRequest], positions: list[int], last: list[int], keep: list[int]
    ) -> tuple[Any, Any, list[GenerationRequest], list[int], list[int]]:
        """Remove finished rows, and the left columns that are padding for every remaining row."""
        import torch
        from transformers.cache_utils import Cache

        if not keep:
            return None, None, [], [], []
        index = torch.tensor(keep, dtype=torch.long)
        mask = mask[index]
        start = int(torch.nonzero(mask.any(dim=0))[0, 0])
        layer_cls = type(cache.layers[0])
        layers = [layer_cls(layer.keys[index, :, start:], layer.values[index, :, start:]) for layer in cache.layers]
        return (
            Cache(layers=layers),
            mask[:, start:].clone(),
            [rows[i] for i in keep],
            [positions[i] for i in keep],
            [last[i] for i in keep],
        )


def _cache_of(output: Any) -> Any:
    """The key/value cache a forward pass returned (``cache`` in transformers 5.x, ``past_key_values`` before)."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values
