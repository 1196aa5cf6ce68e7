r"""Extractive readers: a span-prediction model reads the passage and points at *g* (Section 3.3).

Two readers share one implementation, :class:`SpanReader` (windowing, batching and span
search from :mod:`~searchain_graph.ir.readers.spans`); they differ in how a passage is laid
out for the model and in what their confidence *f* means. This module holds the shared base
and :class:`ExtractiveQAReader`; the paper's reader, whose *f* is DPR's relevance logit, is
:class:`~searchain_graph.ir.readers.dpr.DPRReader`.

:class:`ExtractiveQAReader` takes any ``AutoModelForQuestionAnswering`` checkpoint
(SQuAD-style start/end heads, BERT- or RoBERTa-style tokenizers); the default is
``deepset/roberta-base-squad2``. Such models have no relevance head, so *f* comes from the
span's own probability: over the window's context tokens (those that carry text) plus the
null position (the ``[CLS]``/``<s>`` token a SQuAD 2.0 model points at when there is no
answer),

* ``p = softmax(start_logits)[s] * softmax(end_logits)[e]``, the probability the model
  gives the chosen span (a SQuAD 2.0 model that prefers "no answer" gives every span a low
  ``p``);
* ``f = log(p / (1 - p))`` clipped to ``[-10, 10]``: the same log-odds scale as
  :class:`~searchain_graph.ir.readers.llm.LLMReader` (:func:`~searchain_graph.ir.readers.base.logprob_confidence`),
  so θ = 1.5 keeps the meaning it has there, ``p > 0.82``, and
  :attr:`ExtractiveQAReader.default_threshold` is 1.5 too.

Both readers:

* find *g* with :func:`~searchain_graph.ir.readers.spans.best_span` and read long passages
  in overlapping windows (see :mod:`~searchain_graph.ir.readers.spans`). Each window is
  scored on its own; the window with the highest *f* wins and *g* is its best span;
* take each passage as a :class:`~searchain_graph.ir.readers.base.Passage`, text and title
  apart (``reads_passages = True``, see :mod:`~searchain_graph.ir.readers.base`); ``read`` and
  ``read_batch`` also take a plain ``str``: one line is a text without a title, a string with
  a line break the old ``"title\ntext"`` (deprecated; :func:`~.base.as_passage`);
* return ``("", -10.0)`` for a passage with no text (an empty passage, a title alone),
  without running the model: there is nothing to extract;
* batch: :meth:`~SpanReader.read_batch` encodes all windows of all pairs, sorts them by
  length and runs one forward pass per padded mini-batch of at most ``batch_size`` windows
  under ``torch.inference_mode()`` (on a CPU, mini-batches are also cut where padding would
  exceed ``max_padding``, see :func:`~searchain_graph.ir.readers.spans.plan_batches`).
  :meth:`~SpanReader.read` is ``read_batch`` of one pair, so the two agree (up to the last
  digits of *f*, which padding in a batch may change);
* load lazily, on the first read or on :meth:`~SpanReader.load`, through
  :func:`searchain_graph.llms.hub.from_pretrained`: a missing local directory or a hub name with
  no hub access fails with :class:`~searchain_graph.llms.hub.ModelNotFoundError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from searchain_graph.ir.readers.base import (
    MIN_CONFIDENCE,
    Passage,
    PassageLike,
    ReaderOutput,
    as_passage,
    logprob_confidence,
)
from searchain_graph.ir.readers.spans import Window, best_span, cut_to_tokens, encode_windows, plan_batches
from searchain_graph.llms.extras import require
from searchain_graph.llms.hub import from_pretrained

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_QA_READER", "ExtractiveQAReader", "SpanReader"]

DEFAULT_QA_READER = "deepset/roberta-base-squad2"
"""Default :class:`ExtractiveQAReader` checkpoint: RoBERTa-base fine-tuned on SQuAD 2.0 (so it can say "no answer")."""


class SpanReader:
    """Shared machinery of the extractive readers: loading, windowing, batching, span search."""

    default_threshold: ClassVar[float] = 1.5
    reads_passages: ClassVar[bool] = True
    answers_yes_no: ClassVar[bool] = False  # g is a span: yes/no answers are not verified
    _what: ClassVar[str] = "reader"
    _calibration_kind: ClassVar[str] = "span"

    def __init__(
        self,
        model: str | Path,
        *,
        device: str | None,
        max_length: int,
        stride: int,
        max_answer_tokens: int,
        max_query_tokens: int,
        batch_size: int,
        max_padding: float | None,
    ) -> None:
        if max_answer_tokens < 1 or batch_size < 1 or max_query_tokens < 1 or stride < 0:
            raise ValueError("max_answer_tokens, batch_size and max_query_tokens must be >= 1, stride >= 0")
        room = max_length - self._reserved_tokens(max_query_tokens)
        if room <= stride:
            raise ValueError(
                f"max_length={max_length} leaves {room} passage tokens per window after the question "
                f"(max_query_tokens={max_query_tokens}); it must be more than stride={stride}"
            )
        self.model_name = str(model)
        self.device = device
        self.max_length = max_length
        self.stride = stride
        self.max_answer_tokens = max_answer_tokens
        self.max_query_tokens = max_query_tokens
        self.batch_size = batch_size
        self.max_padding = max_padding
        self._model: Any = None
        self._tokenizer: Any = None
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model_name!r})"

    @property
    def calibration_key(self) -> str:
        """Names this reader and its model for a saved θ: ``"dpr:<model>"``, ``"extractive:<model>"``."""
        return f"{self._calibration_kind}:{self.model_name}"

    # -- what the two readers do differently -----------------------------------------------------
    @staticmethod
    def _reserved_tokens(max_query_tokens: int) -> int:
        """Most tokens of a window that are not passage text."""
        raise NotImplementedError

    def _load(self, source: str) -> tuple[Any, Any]:
        """Load ``(tokenizer, model)``."""
        raise NotImplementedError

    def _windows(self, query: str, passage: Passage) -> list[Window]:
        """The model inputs for one pair (none when the passage has no text).

        The windows' ``char_offsets`` index :meth:`_source` of the passage.
        """
        raise NotImplementedError

    @staticmethod
    def _source(passage: Passage) -> str:
        """The string the model reads the answer from (what the windows' character offsets index)."""
        raise NotImplementedError

    def _forward(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """``(start_logits, end_logits, relevance_logits or None)`` of a padded batch."""
        raise NotImplementedError

    def _confidence(
        self,
        start_logits: torch.Tensor,
        end_logits: torch.Tensor,
        relevance: torch.Tensor | None,
        allowed: torch.Tensor,
        windows: Sequence[Window],
        starts: torch.Tensor,
        ends: torch.Tensor,
    ) -> list[float]:
        """*f* of each window's best span."""
        raise NotImplementedError

    # -- loading ---------------------------------------------------------------------------------
    def load(self) -> Self:
        """Load the tokenizer and weights now (otherwise they load on the first read)."""
        with self._lock:
            self._ensure_loaded()
        return self

    def _ensure_loaded(self) -> None:
        if self._model is not None:
            return
        require(("torch", "transformers"), f"the {self._what}")
        import torch

        tokenizer, model = self._load(self.model_name)
        if not getattr(tokenizer, "is_fast", False):
            raise ValueError(f"{self._what} {self.model_name!r} needs a fast tokenizer (offset mappings)")
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device)
        model.eval()
        self.device = device
        self._tokenizer = tokenizer
        self._model = model

    # -- reading ---------------------------------------------------------------------------------
    def read(self, query: str, passage: PassageLike) -> ReaderOutput:
        """Extract the answer to ``query`` from ``passage`` (for a ``str``, see :func:`.base.as_passage`)."""
        return self.read_batch([(query, passage)])[0]

    async def aread(self, query: str, passage: PassageLike) -> ReaderOutput:
        """Async :meth:`read` (in a worker thread)."""
        return (await self.aread_batch([(query, passage)]))[0]

    async def aread_batch(self, pairs: Sequence[tuple[str, PassageLike]]) -> list[ReaderOutput]:
        """Async :meth:`read_batch` (in a worker thread)."""
        return await asyncio.to_thread(self.read_batch, pairs)

    def read_batch(self, pairs: Sequence[tuple[str, PassageLike]]) -> list[ReaderOutput]:
        """Read many ``(query, passage)`` pairs: all their windows, in padded mini-batches.

        Args:
            pairs: ``(query, Passage)`` pairs (a ``str`` passage: see
                :func:`~searchain_graph.ir.readers.base.as_passage`).

        Returns:
            One :class:`~searchain_graph.ir.readers.base.ReaderOutput` per pair, in order.
        """
        import torch

        queries = [query for query, _ in pairs]
        passages = [as_passage(passage) for _, passage in pairs]
        with self._lock:  # loading, and the tokenizer, which is not safe to share across threads
            self._ensure_loaded()
            per_pair = [self._windows(query, passage) for query, passage in zip(queries, passages, strict=True)]
        flat = [(pair, rank, window) for pair, windows in enumerate(per_pair) for rank, window in enumerate(windows)]
        best: list[tuple[float, int, str] | None] = [None] * len(passages)
        max_padding = self.max_padding
        if max_padding is None and not str(self.device).startswith("cuda"):
            max_padding = 0.2
        lengths = [len(window.input_ids) for _, _, window in flat]
        for batch in plan_batches(lengths, self.batch_size, max_padding):
            chunk = [flat[i] for i in batch]
            windows = [window for _, _, window in chunk]
            inputs, allowed = self._collate(windows)
            with torch.inference_mode():
                start, end, relevance = self._forward({k: v.to(self.device) for k, v in inputs.items()})
                start, end = start.float().cpu(), end.float().cpu()
                relevance = relevance.float().cpu() if relevance is not None else None
                starts, ends, _ = best_span(start, end, allowed, self.max_answer_tokens)
                confidences = self._confidence(start, end, relevance, allowed, windows, starts, ends)
            for (pair, rank, window), s, e, f in zip(chunk, starts.tolist(), ends.tolist(), confidences, strict=True):
                current = best[pair]
                # Highest f wins; between equal f, the earlier window (independent of batch order).
                if current is None or f > current[0] or (f == current[0] and rank < current[1]):
                    best[pair] = (f, rank, self._answer(self._source(passages[pair]), window, s, e))
        return [ReaderOutput("", MIN_CONFIDENCE) if b is None else ReaderOutput(b[2], b[0]) for b in best]

    def _collate(self, windows: Sequence[Window]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """Right-pad a mini-batch; also the mask of positions an answer may use (context tokens with text)."""
        import torch

        width = max(len(w.input_ids) for w in windows)
        pad = self._tokenizer.pad_token_id or 0
        input_ids = torch.full((len(windows), width), pad, dtype=torch.long)
        attention = torch.zeros((len(windows), width), dtype=torch.long)
        allowed = torch.zeros((len(windows), width), dtype=torch.bool)
        types = torch.zeros((len(windows), width), dtype=torch.long) if windows[0].token_type_ids else None
        for row, window in enumerate(windows):
            n = len(window.input_ids)
            input_ids[row, :n] = torch.tensor(window.input_ids)
            attention[row, :n] = 1
            allowed[row, window.context[0] : window.context[1]] = torch.tensor(window.answerable)
            if types is not None and window.token_type_ids is not None:
                types[row, :n] = torch.tensor(window.token_type_ids)
        inputs = {"input_ids": input_ids, "attention_mask": attention}
        if types is not None:
            inputs["token_type_ids"] = types
        return inputs, allowed

    @staticmethod
    def _answer(source: str, window: Window, start: int, end: int) -> str:
        """The substring of ``source`` covered by tokens ``start..end`` of ``window``, widened to whole words."""
        if start < 0:
            return ""
        words = window.word_ids
        first, last = start - window.context[0], end - window.context[0]
        while first > 0 and words[first] is not None and words[first - 1] == words[first]:
            first -= 1
        while last < len(words) - 1 and words[last] is not None and words[last + 1] == words[last]:
            last += 1
        return source[window.char_offsets[first][0] : window.char_offsets[last][1]].strip()


class ExtractiveQAReader(SpanReader):
    r"""Any SQuAD-style extractive QA model; *f* = log-odds of the span's probability (θ = 1.5 ⇔ p > 0.82).

    The model reads the title and the text as one context, ``"title\ntext"`` (the text alone
    when the passage has no title): SQuAD models have no title segment, and a passage often
    names its subject only in the title, so *g* may come from the title. *f* is defined in
    the module docstring: ``p`` is the probability of the chosen span under the start and end
    softmaxes over the window's context tokens and the null position, ``f = log(p / (1 - p))``
    clipped to ``[-10, 10]``, the scale of :class:`~searchain_graph.ir.readers.llm.LLMReader`.

    Args:
        model: A local directory or hub name of an ``AutoModelForQuestionAnswering``
            checkpoint with a fast tokenizer (default ``deepset/roberta-base-squad2``).
        device: Torch device; ``None`` picks ``cuda`` when available, else ``cpu``.
        max_length: Tokens per window, question included (384, the usual SQuAD setting).
        stride: Tokens shared by neighbouring windows of a long passage.
        max_answer_tokens: Longest answer, in tokens (15, as in the transformers QA pipeline).
        max_query_tokens: The question is cut to this many tokens.
        batch_size: Most windows per forward pass.
        max_padding: Most padding per forward pass, as a fraction of its real tokens
            (:func:`~searchain_graph.ir.readers.spans.plan_batches`); ``None``: no limit on a
            CUDA device, 0.2 elsewhere (on a CPU, padding costs as much as real tokens).
            ``float("inf")``: no limit.

    Attributes:
        default_threshold: θ for this reader's *f*, 1.5, i.e. ``p > 0.82``: the threshold
            the paper uses for "confident enough to overrule the LLM", read on the
            package's log-odds scale.

    Example:
        >>> reader = ExtractiveQAReader("/models/roberta-base-squad2")  # doctest: +SKIP
        >>> passage = Passage("Kevin Drew was born in Toronto.", title="Kevin Drew")
        >>> reader.read("Where was Kevin Drew born?", passage)  # doctest: +SKIP
        ReaderOutput(answer='Toronto', confidence=4.3)
    """

    default_threshold: ClassVar[float] = 1.5
    _what: ClassVar[str] = "extractive QA model"
    _calibration_kind: ClassVar[str] = "extractive"

    def __init__(
        self,
        model: str | Path = DEFAULT_QA_READER,
        *,
        device: str | None = None,
        max_length: int = 384,
        stride: int = 128,
        max_answer_tokens: int = 15,
        max_query_tokens: int = 64,
        batch_size: int = 32,
        max_padding: float | None = None,
    ) -> None:
        super().__init__(
            model,
            device=device,
            max_length=max_length,
            stride=stride,
            max_answer_tokens=max_answer_tokens,
            max_query_tokens=max_query_tokens,
            batch_size=batch_size,
            max_padding=max_padding,
        )

    @staticmethod
    def _reserved_tokens(max_query_tokens: int) -> int:
        return max_query_tokens + 4  # at most 4 special tokens in a pair (<s> q </s></s> c </s>)

    def _load(self, source: str) -> tuple[Any, Any]:
        from transformers import AutoModelForQuestionAnswering, AutoTokenizer

        tokenizer = from_pretrained(AutoTokenizer.from_pretrained, source, what=f"{self._what} tokenizer")
        model = from_pretrained(AutoModelForQuestionAnswering.from_pretrained, source, what=self._what)
        return tokenizer, model

    @staticmethod
    def _source(passage: Passage) -> str:
        r"""``"title\ntext"``, or the text alone when there is no title."""
        return passage.joined()

    def _windows(self, query: str, passage: Passage) -> list[Window]:
        r"""``question`` and ``title\ntext`` pair-encoded in windows (the tokenizer's own pair layout)."""
        if not passage.text.strip():
            return []
        question = cut_to_tokens(self._tokenizer, query, self.max_query_tokens)
        return encode_windows(
            self._tokenizer,
            question,
            self._source(passage),
            max_length=self.max_length,
            stride=self.stride,
            context_offset=0,
        )

    def _forward(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        out = self._model(**inputs)
        return out.start_logits, out.end_logits, None

    def _confidence(
        self,
        start_logits: torch.Tensor,
        end_logits: torch.Tensor,
        relevance: torch.Tensor | None,
        allowed: torch.Tensor,
        windows: Sequence[Window],
        starts: torch.Tensor,
        ends: torch.Tensor,
    ) -> list[float]:
        """*f* = log-odds of ``softmax(start)[s] * softmax(end)[e]`` over context + null positions."""
        import torch

        rows = torch.arange(len(windows))
        support = allowed.clone()
        support[rows, torch.tensor([w.null_index for w in windows])] = True
        log_start = torch.log_softmax(start_logits.double().masked_fill(~support, float("-inf")), dim=-1)
        log_end = torch.log_softmax(end_logits.double().masked_fill(~support, float("-inf")), dim=-1)
        logp = log_start[rows, starts.clamp(min=0)] + log_end[rows, ends.clamp(min=0)]
        return [
            logprob_confidence([lp]) if s >= 0 else MIN_CONFIDENCE
            for lp, s in zip(logp.tolist(), starts.tolist(), strict=True)
        ]
