"""The paper's reader: DPR's extractive reader, *f* = its relevance logit (Section 3.3).

:class:`DPRReader` reads with ``facebook/dpr-reader-multiset-base``
(``transformers.DPRReader``). Input is laid out as in DPR,
``[CLS] question [SEP] title [SEP] text``, with the title and the text of the
:class:`~searchain_graph.ir.readers.base.Passage` (a passage without a title has an empty
title segment, ``[CLS] question [SEP] [SEP] text``; a text of several lines is all text).
*g* is the best span of the text (never of the title or the question) and *f* is DPR's
**relevance logit**: how likely the passage is to hold the answer, an unbounded logit on
DPR's own scale, typically between about -10 and 10. The paper and its code use θ = 1.5
with this reader, so :attr:`DPRReader.default_threshold` is 1.5.

Windowing, batching, span search and loading are shared with
:class:`~searchain_graph.ir.readers.extractive.ExtractiveQAReader` (see
:mod:`~searchain_graph.ir.readers.extractive` and :mod:`~searchain_graph.ir.readers.spans`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from searchain_graph.ir.readers.base import MIN_CONFIDENCE, Passage
from searchain_graph.ir.readers.extractive import SpanReader
from searchain_graph.ir.readers.spans import Window, cut_to_tokens, encode_windows
from searchain_graph.llms.hub import from_pretrained

if TYPE_CHECKING:
    import torch

__all__ = ["CONFIDENCES", "DEFAULT_DPR_READER", "DPRReader"]

DEFAULT_DPR_READER = "facebook/dpr-reader-multiset-base"
"""The paper's reader checkpoint."""

Confidence = Literal["relevance", "joint"]
CONFIDENCES: tuple[Confidence, ...] = ("relevance", "joint")
"""What *f* is: the relevance logit (the paper's), or that plus the span's log-probability."""


class DPRReader(SpanReader):
    r"""The paper's reader: DPR's extractive reader, *f* = its relevance logit (θ = 1.5).

    See the module docstring for the layout, and :mod:`~searchain_graph.ir.readers.extractive`
    for windowing and batching. The weights load on the first read, or on :meth:`load`.

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
            (:func:`~searchain_graph.ir.readers.spans.plan_batches`); ``None``: no limit on a
            CUDA device, 0.2 elsewhere (on a CPU, padding costs as much as real tokens).
            ``float("inf")``: no limit.
        confidence: What *f* is. ``"relevance"`` (the paper's): the window's relevance logit,
            how likely the passage is to answer. ``"joint"``: that logit plus the log-probability
            of the extracted span under the span head (``log softmax(start)[s] +
            log softmax(end)[e]`` over the passage's tokens), so that *f* is also low when the
            reader is unsure *which* words answer. A θ belongs to one of them: calibrate each.

    Attributes:
        default_threshold: θ for this reader's *f*, 1.5 (the paper's value for DPR's
            relevance logit).

    Example:
        >>> reader = DPRReader("/models/dpr-reader-multiset-base")  # doctest: +SKIP
        >>> passage = Passage("Kevin Drew was born in Toronto.", title="Kevin Drew")
        >>> reader.read("Where was Kevin Drew born?", passage)  # doctest: +SKIP
        ReaderOutput(answer='Toronto', confidence=6.1)
    """

    default_threshold: ClassVar[float] = 1.5
    _what: ClassVar[str] = "DPR reader"
    _calibration_kind: ClassVar[str] = "dpr"

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
        confidence: Confidence = "relevance",
    ) -> None:
        if confidence not in CONFIDENCES:
            raise ValueError(f"confidence must be one of {', '.join(CONFIDENCES)}, got {confidence!r}")
        self.confidence: Confidence = confidence
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

    @property
    def calibration_key(self) -> str:
        """Names the model and what *f* is: ``"dpr:<model>"``, ``"dpr:<model>:joint"``."""
        return f"{self._calibration_kind}:{self.model_name}" + (":joint" if self.confidence == "joint" else "")

    @staticmethod
    def _reserved_tokens(max_query_tokens: int) -> int:
        return 2 * max_query_tokens + 3  # [CLS] question [SEP] title [SEP]

    def _load(self, source: str) -> tuple[Any, Any]:
        from transformers import DPRReader as HFDPRReader
        from transformers import DPRReaderTokenizerFast

        tokenizer = from_pretrained(DPRReaderTokenizerFast.from_pretrained, source, what="DPR reader tokenizer")
        model = from_pretrained(HFDPRReader.from_pretrained, source, what=self._what)
        return tokenizer, model

    @staticmethod
    def _source(passage: Passage) -> str:
        """The text: *g* is never taken from the title."""
        return passage.text

    def _windows(self, query: str, passage: Passage) -> list[Window]:
        """``[CLS] question [SEP] title [SEP] text``, the text in windows.

        The question and text are pair-encoded in windows (``[CLS] q [SEP] text [SEP]``) by
        the shared encoder; the title is then put after the first ``[SEP]`` and the closing
        ``[SEP]`` dropped, which is DPR's layout (no separator after the text). An empty
        title leaves an empty title segment, ``[CLS] q [SEP] [SEP] text``, as
        ``DPRReaderTokenizer`` lays out ``titles=""``.
        """
        title, text = passage.title.strip(), passage.text
        if not text.strip():
            return []
        tok = self._tokenizer
        question = cut_to_tokens(tok, query, self.max_query_tokens)
        title_ids = tok(title, add_special_tokens=False)["input_ids"][: self.max_query_tokens] if title else []
        windows = encode_windows(
            tok, question, text, max_length=self.max_length - len(title_ids), stride=self.stride, context_offset=0
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
        windows: Sequence[Window],
        starts: torch.Tensor,
        ends: torch.Tensor,
    ) -> list[float]:
        """*f* = the window's relevance logit (``"joint"``: plus the best span's log-probability)."""
        assert relevance is not None
        if self.confidence == "relevance":
            return [float(r) for r in relevance.tolist()]
        import torch

        rows = torch.arange(len(windows))
        log_start = torch.log_softmax(start_logits.double().masked_fill(~allowed, float("-inf")), dim=-1)
        log_end = torch.log_softmax(end_logits.double().masked_fill(~allowed, float("-inf")), dim=-1)
        span = log_start[rows, starts.clamp(min=0)] + log_end[rows, ends.clamp(min=0)]
        return [
            float(r) + lp if s >= 0 else MIN_CONFIDENCE
            for r, lp, s in zip(relevance.tolist(), span.tolist(), starts.tolist(), strict=True)
        ]
