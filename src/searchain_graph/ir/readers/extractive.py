"""Extractive readers: a span-prediction model reads the passage and points at *g* (Section 3.3).

Two readers share one implementation (windowing, batching, span search); they differ in
how a passage is laid out for the model and in what their confidence *f* means.

:class:`DPRReader` is the paper's reader, ``facebook/dpr-reader-multiset-base``
(``transformers.DPRReader``). Input is laid out as in DPR,
``[CLS] question [SEP] title [SEP] text``, where the title is the passage's first line
(see :func:`split_passage`). *g* is the best span of the text (never of the title or the
question) and *f* is DPR's **relevance logit**: how likely the passage is to hold the
answer, an unbounded logit on DPR's own scale, typically between about -10 and 10. The
paper and its code use θ = 1.5 with this reader, so :attr:`DPRReader.default_threshold`
is 1.5.

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

* find *g* with :func:`best_span`: the span of the passage's tokens with the highest
  ``start_logit + end_logit``, end at or after start and at most ``max_answer_tokens``
  tokens long (unlike the authors' code, which takes the two argmaxes independently and can
  return an end before the start). Only tokens that carry text count: a byte-level BPE's
  bare newline token, between title and text, is never part of an answer. *g* is the
  passage's own substring (through the tokenizer's offset mappings), not detokenised word
  pieces, widened to whole words (the tokenizer's words) when the span starts or ends inside
  one (``"1976"``, not ``"6"`` of ``"##6"``; DPR's own code does the same);
* never fail on long inputs: the question (and the DPR title) is cut to
  ``max_query_tokens`` tokens, and a passage that does not fit in ``max_length`` tokens is
  read in overlapping windows (``stride`` tokens shared by neighbours) that together cover
  every token. Each window is scored on its own; the window with the highest *f* wins and
  *g* is its best span;
* return ``("", -10.0)`` for a passage with no text (an empty passage, a title alone),
  without running the model: there is nothing to extract;
* batch: :meth:`~DPRReader.read_batch` encodes all windows of all pairs, sorts them by
  length and runs one forward pass per padded mini-batch of at most ``batch_size`` windows
  under ``torch.inference_mode()`` (on a CPU, mini-batches are also cut where padding would
  exceed ``max_padding``, see :func:`plan_batches`). :meth:`~DPRReader.read` is
  ``read_batch`` of one pair, so the two agree;
* load lazily, on the first read or on :meth:`~DPRReader.load`, through
  :func:`searchain_graph.llms.hub.from_pretrained`: a missing local directory or a hub name with
  no hub access fails with :class:`~searchain_graph.llms.hub.ModelNotFoundError`.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from searchain_graph.ir.readers.base import MIN_CONFIDENCE, ReaderOutput, logprob_confidence
from searchain_graph.llms.hub import from_pretrained

if TYPE_CHECKING:
    import torch

__all__ = ["DPRReader", "ExtractiveQAReader", "best_span", "plan_batches", "split_passage"]

DEFAULT_DPR_READER = "facebook/dpr-reader-multiset-base"
"""The paper's reader checkpoint."""

DEFAULT_QA_READER = "deepset/roberta-base-squad2"
"""Default :class:`ExtractiveQAReader` checkpoint: RoBERTa-base fine-tuned on SQuAD 2.0 (so it can say "no answer")."""


def best_span(
    start_logits: torch.Tensor, end_logits: torch.Tensor, mask: torch.Tensor, max_answer_tokens: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The highest-scoring span of allowed tokens, for one sequence or a batch.

    A span ``(s, e)`` is a candidate when ``s <= e <= s + max_answer_tokens - 1`` and every
    position from ``s`` to ``e`` is allowed by ``mask``; its score is
    ``start_logits[s] + end_logits[e]``. Ties go to the earliest start, then the shortest span.

    Args:
        start_logits: Start scores, shape ``(L,)`` or ``(B, L)``.
        end_logits: End scores, same shape.
        mask: ``True`` where a token may be part of the answer, same shape.
        max_answer_tokens: Longest span, in tokens (at least 1).

    Returns:
        ``(starts, ends, scores)``, each of shape ``()`` or ``(B,)``. Where no position is
        allowed, start and end are -1 and the score is ``-inf``.
    """
    import torch

    if max_answer_tokens < 1:
        raise ValueError(f"max_answer_tokens must be at least 1, got {max_answer_tokens}")
    single = start_logits.dim() == 1
    start = start_logits.unsqueeze(0) if single else start_logits
    end = end_logits.unsqueeze(0) if single else end_logits
    allowed = (mask.unsqueeze(0) if single else mask).to(torch.bool)
    batch, length = start.shape
    if length == 0:
        missing = torch.full((batch,), -1, dtype=torch.long)
        scores = torch.full((batch,), float("-inf"))
        return (missing[0], missing[0], scores[0]) if single else (missing, missing, scores)
    width = min(max_answer_tokens, length)
    positions = torch.arange(length, device=start.device)
    ends = positions[:, None] + torch.arange(width, device=start.device)[None, :]  # (L, K): e = s + k
    in_range = ends < length
    ends = ends.clamp(max=length - 1)
    # Number of disallowed positions in [0, i]: a span is clean when the count does not grow.
    blocked = (~allowed).to(torch.long).cumsum(-1)
    clean = (blocked[:, ends] == blocked[:, :, None]) & allowed[:, :, None] & in_range[None]
    scores = start.float()[:, :, None] + end.float()[:, ends]
    scores = scores.masked_fill(~clean, float("-inf")).reshape(batch, length * width)
    best, flat = scores.max(dim=-1)  # first maximum: earliest start, then shortest span
    starts = torch.div(flat, width, rounding_mode="floor")
    stops = starts + flat % width
    none = torch.isneginf(best)
    starts = starts.masked_fill(none, -1)
    stops = stops.masked_fill(none, -1)
    if single:
        return starts[0], stops[0], best[0]
    return starts, stops, best


def plan_batches(lengths: Sequence[int], batch_size: int, max_padding: float | None = None) -> list[list[int]]:
    """Group sequences into padded mini-batches: longest first, at most ``batch_size`` each.

    With ``max_padding``, a mini-batch is also closed before its padding would exceed
    ``max_padding`` times its real tokens. Padding is computed like real tokens; on a CPU,
    where a forward pass costs about the same per token batched or not, a padded batch of
    uneven sequences is slower than reading them one at a time.

    Args:
        lengths: Length of each sequence.
        batch_size: Most sequences per mini-batch.
        max_padding: Most padding per mini-batch, as a fraction of its real tokens (``None``: no limit).

    Returns:
        Indices into ``lengths``, one list per mini-batch, longest sequences first.
    """
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    tokens = 0
    for i in order:
        if current:
            full = len(current) >= batch_size
            padded = lengths[current[0]] * (len(current) + 1)
            if full or (max_padding is not None and padded > (1 + max_padding) * (tokens + lengths[i])):
                batches.append(current)
                current, tokens = [], 0
        current.append(i)
        tokens += lengths[i]
    if current:
        batches.append(current)
    return batches


def split_passage(passage: str) -> tuple[str, str, int]:
    r"""Split a reader passage ``"title\ntext"`` into ``(title, text, offset of text in passage)``.

    The graph gives readers ``title + "\n" + text``, or the text alone when there is no
    title (:func:`~searchain_graph.ir.corpus.passage_text`), so the first line is the title
    when there is more than one line. A passage of one line is all text.
    """
    title, newline, text = passage.partition("\n")
    if not newline:
        return "", passage, 0
    return title.strip(), text, len(title) + 1


def _cut_to_tokens(tokenizer: Any, text: str, limit: int) -> str:
    """``text`` cut, at a token boundary, to its first ``limit`` tokens."""
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoding["offset_mapping"]
    if len(offsets) <= limit:
        return text
    return text[: offsets[limit - 1][1]] if limit > 0 else ""


@dataclass(slots=True)
class _Window:
    """One model input: the question and a stretch of a passage's context tokens."""

    input_ids: list[int]
    token_type_ids: list[int] | None
    context: tuple[int, int]  # token positions [first, last + 1) of the context
    char_offsets: list[tuple[int, int]]  # per context token: (start, end) in the passage string
    answerable: list[bool]  # per context token: it carries text (not a bare newline), so an answer may use it
    word_ids: list[int | None]  # per context token: the tokenizer's word index (word pieces share one)
    null_index: int  # the [CLS]/<s> position ("no answer" for SQuAD 2.0 models)


def _encode_windows(
    tokenizer: Any, question: str, context: str, *, max_length: int, stride: int, context_offset: int
) -> list[_Window]:
    """Pair-encode ``(question, context)`` in overlapping windows that together cover the context.

    Uses the tokenizer's own pair layout (``[CLS] q [SEP] c [SEP]``, ``<s> q </s></s> c </s>``,
    ...) with ``truncation="only_second"`` and overflowing windows of ``stride`` shared tokens.
    ``context_offset`` is where ``context`` starts in the passage string.
    """
    encoding = tokenizer(
        question,
        context,
        truncation="only_second",
        max_length=max_length,
        stride=stride,
        return_overflowing_tokens=True,
        return_offsets_mapping=True,
        return_token_type_ids="token_type_ids" in tokenizer.model_input_names,
    )
    cls_id = tokenizer.cls_token_id
    windows = []
    for i, input_ids in enumerate(encoding["input_ids"]):
        positions = [j for j, seq in enumerate(encoding.sequence_ids(i)) if seq == 1]
        if not positions:
            continue
        first, last = positions[0], positions[-1] + 1
        spans = encoding["offset_mapping"][i][first:last]
        offsets = [(a + context_offset, b + context_offset) for a, b in spans]
        answerable = [bool(context[a:b].strip()) for a, b in spans]
        type_ids = encoding["token_type_ids"][i] if "token_type_ids" in encoding else None
        null_index = input_ids.index(cls_id) if cls_id is not None and cls_id in input_ids else 0
        words = encoding.word_ids(i)[first:last]
        windows.append(_Window(list(input_ids), type_ids, (first, last), offsets, answerable, words, null_index))
    return windows


class _SpanReader:
    """Shared machinery of the extractive readers: loading, windowing, batching, span search."""

    default_threshold: ClassVar[float] = 1.5
    _what: ClassVar[str] = "reader"

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

    # -- what the two readers do differently -----------------------------------------------------
    @staticmethod
    def _reserved_tokens(max_query_tokens: int) -> int:
        """Most tokens of a window that are not passage text."""
        raise NotImplementedError

    def _load(self, source: str) -> tuple[Any, Any]:
        """Load ``(tokenizer, model)``."""
        raise NotImplementedError

    def _windows(self, query: str, passage: str) -> list[_Window]:
        """The model inputs for one pair (none when the passage has no text)."""
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
        windows: Sequence[_Window],
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
    def read(self, query: str, passage: str) -> ReaderOutput:
        """Extract the answer to ``query`` from ``passage``."""
        return self.read_batch([(query, passage)])[0]

    async def aread(self, query: str, passage: str) -> ReaderOutput:
        """Async :meth:`read` (in a worker thread)."""
        return (await self.aread_batch([(query, passage)]))[0]

    async def aread_batch(self, pairs: Sequence[tuple[str, str]]) -> list[ReaderOutput]:
        """Async :meth:`read_batch` (in a worker thread)."""
        return await asyncio.to_thread(self.read_batch, pairs)

    def read_batch(self, pairs: Sequence[tuple[str, str]]) -> list[ReaderOutput]:
        """Read many ``(query, passage)`` pairs: all their windows, in padded mini-batches.

        Returns:
            One :class:`~searchain_graph.ir.readers.base.ReaderOutput` per pair, in order.
        """
        import torch

        pairs = list(pairs)
        with self._lock:  # loading, and the tokenizer, which is not safe to share across threads
            self._ensure_loaded()
            per_pair = [self._windows(query, passage) for query, passage in pairs]
        flat = [(pair, rank, window) for pair, windows in enumerate(per_pair) for rank, window in enumerate(windows)]
        best: list[tuple[float, int, str] | None] = [None] * len(pairs)
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
                    best[pair] = (f, rank, self._answer(pairs[pair][1], window, s, e))
        return [ReaderOutput("", MIN_CONFIDENCE) if b is None else ReaderOutput(b[2], b[0]) for b in best]

    def _collate(self, windows: Sequence[_Window]) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
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
    def _answer(passage: str, window: _Window, start: int, end: int) -> str:
        """The passage substring covered by tokens ``start..end`` of ``window``, widened to whole words."""
        if start < 0:
            return ""
        words = window.word_ids
        first, last = start - window.context[0], end - window.context[0]
        while first > 0 and words[first] is not None and words[first - 1] == words[first]:
            first -= 1
        while last < len(words) - 1 and words[last] is not None and words[last + 1] == words[last]:
            last += 1
        return passage[window.char_offsets[first][0] : window.char_offsets[last][1]].strip()


class DPRReader(_SpanReader):
    r"""The paper's reader: DPR's extractive reader, *f* = its relevance logit (θ = 1.5).

    See the module docstring for the layout, windowing and batching. The weights load on
    the first read, or on :meth:`load`.

    Args:
        model: A local directory or hub name of a ``transformers.DPRReader`` checkpoint with
            its tokenizer (default ``facebook/dpr-reader-multiset-base``, as in the paper).
        device: Torch device; ``None`` picks ``cuda`` when available, else ``cpu``.
        max_length: Tokens per window, question and title included (350, as in DPR).
        stride: Tokens shared by neighbouring windows of a long passage.
        max_answer_tokens: Longest answer, in tokens (10, as in DPR).
        max_query_tokens: The question and the title are each cut to this many tokens.
        batch_size: Most windows per forward pass.
        max_padding: Most padding per forward pass, as a fraction of its real tokens
            (:func:`plan_batches`); ``None``: no limit on a CUDA device, 0.2 elsewhere (on a
            CPU, padding costs as much as real tokens). ``float("inf")``: no limit.

    Attributes:
        default_threshold: θ for this reader's *f*, 1.5 (the paper's value for DPR's
            relevance logit).

    Example:
        >>> reader = DPRReader("/models/dpr-reader-multiset-base")  # doctest: +SKIP
        >>> reader.read("Where was Kevin Drew born?", "Kevin Drew\nKevin Drew was born in Toronto.")  # doctest: +SKIP
        ReaderOutput(answer='Toronto', confidence=6.1)
    """

    default_threshold: ClassVar[float] = 1.5
    _what: ClassVar[str] = "DPR reader"

    def __init__(
        self,
        model: str | Path = DEFAULT_DPR_READER,
        *,
        device: str | None = None,
        max_length: int = 350,
        stride: int = 128,
        max_answer_tokens: int = 10,
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
        return 2 * max_query_tokens + 3  # [CLS] question [SEP] title [SEP]

    def _load(self, source: str) -> tuple[Any, Any]:
        from transformers import DPRReader as HFDPRReader
        from transformers import DPRReaderTokenizerFast

        tokenizer = from_pretrained(DPRReaderTokenizerFast.from_pretrained, source, what="DPR reader tokenizer")
        model = from_pretrained(HFDPRReader.from_pretrained, source, what=self._what)
        return tokenizer, model

    def _windows(self, query: str, passage: str) -> list[_Window]:
        """``[CLS] question [SEP] title [SEP] text``, the text in windows.

        The question and text are pair-encoded in windows (``[CLS] q [SEP] text [SEP]``) by
        the shared encoder; the title is then put after the first ``[SEP]`` and the closing
        ``[SEP]`` dropped, which is DPR's layout (no separator after the text).
        """
        title, text, offset = split_passage(passage)
        if not text.strip():
            return []
        tok = self._tokenizer
        question = _cut_to_tokens(tok, query, self.max_query_tokens)
        title_ids = tok(title, add_special_tokens=False)["input_ids"][: self.max_query_tokens] if title else []
        windows = _encode_windows(
            tok, question, text, max_length=self.max_length - len(title_ids), stride=self.stride, context_offset=offset
        )
        for window in windows:
            first, last = window.context
            title_part = [*title_ids, tok.sep_token_id]
            window.input_ids = window.input_ids[:first] + title_part + window.input_ids[first:last]
            window.context = (first + len(title_part), last + len(title_part))
            window.token_type_ids = None  # DPR's reader takes none
        return windows

    def _forward(self, inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        out = self._model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
        return out.start_logits, out.end_logits, out.relevance_logits

    def _confidence(
        self,
        start_logits: torch.Tensor,
        end_logits: torch.Tensor,
        relevance: torch.Tensor | None,
        allowed: torch.Tensor,
        windows: Sequence[_Window],
        starts: torch.Tensor,
        ends: torch.Tensor,
    ) -> list[float]:
        """*f* = the window's relevance logit."""
        assert relevance is not None
        return [float(r) for r in relevance.tolist()]


class ExtractiveQAReader(_SpanReader):
    r"""Any SQuAD-style extractive QA model; *f* = log-odds of the span's probability (θ = 1.5 ⇔ p > 0.82).

    The model reads the whole passage (title line included: SQuAD models have no title
    segment, and a passage often names its subject only in the title), so *g* may come
    from the title. *f* is defined in the module docstring: ``p`` is the probability of
    the chosen span under the start and end softmaxes over the window's context tokens and
    the null position, ``f = log(p / (1 - p))`` clipped to ``[-10, 10]``, the scale of
    :class:`~searchain_graph.ir.readers.llm.LLMReader`.

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
            (:func:`plan_batches`); ``None``: no limit on a CUDA device, 0.2 elsewhere (on a
            CPU, padding costs as much as real tokens). ``float("inf")``: no limit.

    Attributes:
        default_threshold: θ for this reader's *f*, 1.5, i.e. ``p > 0.82``: the threshold
            the paper uses for "confident enough to overrule the LLM", read on the
            package's log-odds scale.

    Example:
        >>> reader = ExtractiveQAReader("/models/roberta-base-squad2")  # doctest: +SKIP
        >>> reader.read("Where was Kevin Drew born?", "Kevin Drew\nKevin Drew was born in Toronto.")  # doctest: +SKIP
        ReaderOutput(answer='Toronto', confidence=4.3)
    """

    default_threshold: ClassVar[float] = 1.5
    _what: ClassVar[str] = "extractive QA model"

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

    def _windows(self, query: str, passage: str) -> list[_Window]:
        if not passage.strip():
            return []
        question = _cut_to_tokens(self._tokenizer, query, self.max_query_tokens)
        return _encode_windows(
            self._tokenizer, question, passage, max_length=self.max_length, stride=self.stride, context_offset=0
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
        windows: Sequence[_Window],
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
