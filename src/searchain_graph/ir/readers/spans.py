r"""Span decoding, batch planning and passage windows: the model-free machinery of the extractive readers.

:class:`~searchain_graph.ir.readers.extractive.ExtractiveQAReader` and
:class:`~searchain_graph.ir.readers.dpr.DPRReader` share it:

* :func:`best_span` finds *g*: the span of the passage's tokens with the highest
  ``start_logit + end_logit``, end at or after start and at most ``max_answer_tokens``
  tokens long (unlike the authors' code, which takes the two argmaxes independently and can
  return an end before the start). Only tokens that carry text count: a byte-level BPE's
  bare newline token, between title and text, is never part of an answer (the ``answerable``
  mask of a :class:`Window`). The readers turn the span into the passage's own substring
  (through the tokenizer's offset mappings), not detokenised word pieces, widened to whole
  words (the tokenizer's words) when the span starts or ends inside one (``"1976"``, not
  ``"6"`` of ``"##6"``; DPR's own code does the same);
* long inputs never fail: the question (and the DPR title) is cut to ``max_query_tokens``
  tokens (:func:`cut_to_tokens`), and a passage that does not fit in ``max_length`` tokens
  is read in overlapping windows (``stride`` tokens shared by neighbours) that together cover
  every token (:func:`encode_windows`). The readers get the title and the text apart
  (:class:`~searchain_graph.ir.readers.base.Passage`); :func:`split_passage` splits the old
  interface's ``"title\ntext"`` string, for code that has only that;
* :func:`plan_batches` groups the windows of all pairs into padded mini-batches, longest
  first, at most ``batch_size`` each (on a CPU, also cut where padding would exceed
  ``max_padding``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

__all__ = ["Window", "best_span", "cut_to_tokens", "encode_windows", "plan_batches", "split_passage"]


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
    r"""Split an old-interface passage ``"title\ntext"`` into ``(title, text, offset of text in passage)``.

    The old reader interface passed ``title + "\n" + text``, or the text alone when there was
    no title (:func:`~searchain_graph.ir.corpus.passage_text`), so the first line is taken for
    the title when there is more than one line, and a passage of one line is all text. A text
    of several lines without a title is split wrongly, which is why readers now get a
    :class:`~searchain_graph.ir.readers.base.Passage`; this is for code that has only the string
    (:func:`~searchain_graph.ir.readers.base.passage_of` does the same).
    """
    title, newline, text = passage.partition("\n")
    if not newline:
        return "", passage, 0
    return title.strip(), text, len(title) + 1


def cut_to_tokens(tokenizer: Any, text: str, limit: int) -> str:
    """``text`` cut, at a token boundary, to its first ``limit`` tokens.

    Args:
        tokenizer: A fast ``transformers`` tokenizer (it gives offset mappings).
        text: The text to cut (a question, a DPR title).
        limit: Most tokens kept, special tokens not counted.

    Returns:
        ``text`` itself when it has at most ``limit`` tokens, else its prefix ending with the
        last character of token ``limit`` (``""`` for a ``limit`` of 0 or less).
    """
    encoding = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    offsets = encoding["offset_mapping"]
    if len(offsets) <= limit:
        return text
    return text[: offsets[limit - 1][1]] if limit > 0 else ""


@dataclass(slots=True)
class Window:
    """One model input: the question and a stretch of a passage's context tokens."""

    input_ids: list[int]
    token_type_ids: list[int] | None
    context: tuple[int, int]  # token positions [first, last + 1) of the context
    char_offsets: list[tuple[int, int]]  # per context token: (start, end) in the passage string
    answerable: list[bool]  # per context token: it carries text (not a bare newline), so an answer may use it
    word_ids: list[int | None]  # per context token: the tokenizer's word index (word pieces share one)
    null_index: int  # the [CLS]/<s> position ("no answer" for SQuAD 2.0 models)


def encode_windows(
    tokenizer: Any, question: str, context: str, *, max_length: int, stride: int, context_offset: int
) -> list[Window]:
    """Pair-encode ``(question, context)`` in overlapping windows that together cover the context.

    Uses the tokenizer's own pair layout (``[CLS] q [SEP] c [SEP]``, ``<s> q </s></s> c </s>``,
    ...) with ``truncation="only_second"`` and overflowing windows of ``stride`` shared tokens.
    ``context_offset`` is where ``context`` starts in the passage string.

    Args:
        tokenizer: A fast ``transformers`` tokenizer (it gives offset mappings and word ids).
        question: The question, already cut (:func:`cut_to_tokens`).
        context: The passage string the answer is read from.
        max_length: Tokens per window, question and special tokens included.
        stride: Tokens shared by neighbouring windows.
        context_offset: Added to every character offset, so that they index the passage string.

    Returns:
        One :class:`Window` per window that holds context tokens, in order.
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
        windows.append(Window(list(input_ids), type_ids, (first, last), offsets, answerable, words, null_index))
    return windows
