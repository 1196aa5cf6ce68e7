"""The reader interface: extract an answer *g* from a passage with a confidence *f* (Section 3.3).

A reader is any object with ``read(query, passage) -> ReaderOutput``. When it also
has ``read_batch(pairs)`` (and, for async graphs, ``aread_batch``), SearChain reads
all nodes of one round in a single call (:func:`read_pairs`, :func:`aread_pairs`).

Confidences of the readers shipped here (:class:`~searchain_graph.ir.readers.llm.LLMReader`,
:class:`~searchain_graph.ir.readers.extractive.ExtractiveQAReader`) are log-odds, clipped to
``[MIN_CONFIDENCE, MAX_CONFIDENCE]`` (:func:`logprob_confidence`), so that the paper's θ = 1.5
keeps its meaning of "confident enough to overrule the LLM" (p > 0.82). The paper's DPR reader,
whose *f* is a relevance logit, is a different scale; see ``docs/method.md``.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

MIN_CONFIDENCE = -10.0
MAX_CONFIDENCE = 10.0


class ReaderOutput(NamedTuple):
    """What a reader extracts from one passage.

    Attributes:
        answer: The extracted answer *g* ("" when the passage holds none).
        confidence: The reader's confidence *f*; IR overrules the LLM only when ``f > θ``.
    """

    answer: str
    confidence: float


@runtime_checkable
class Reader(Protocol):
    """The reader interface: ``read(query, passage) -> ReaderOutput``."""

    def read(self, query: str, passage: str) -> ReaderOutput:
        """Extract the answer to ``query`` from ``passage``."""
        ...


def _check_outputs(outputs: Sequence[Any], expected: int, reader: object) -> list[ReaderOutput]:
    outputs = list(outputs)
    if len(outputs) != expected:
        raise ValueError(f"{type(reader).__name__}.read_batch returned {len(outputs)} results for {expected} pairs")
    result = []
    for out in outputs:
        answer, confidence = out
        result.append(ReaderOutput(str(answer or ""), float(confidence)))
    return result


def read_pairs(reader: Reader, pairs: Sequence[tuple[str, str]]) -> list[ReaderOutput]:
    """Read ``(query, passage)`` pairs, in one ``read_batch`` call when the reader has one."""
    if not pairs:
        return []
    batch = getattr(reader, "read_batch", None)
    if callable(batch):
        return _check_outputs(batch(list(pairs)), len(pairs), reader)
    return _check_outputs([reader.read(q, p) for q, p in pairs], len(pairs), reader)


async def aread_pairs(reader: Reader, pairs: Sequence[tuple[str, str]]) -> list[ReaderOutput]:
    """Async :func:`read_pairs`: uses ``aread_batch`` when present, else a worker thread."""
    if not pairs:
        return []
    abatch = getattr(reader, "aread_batch", None)
    if callable(abatch):
        return _check_outputs(await abatch(list(pairs)), len(pairs), reader)
    return await asyncio.to_thread(read_pairs, reader, pairs)


def logprob_confidence(logprobs: Sequence[float]) -> float:
    """Log-odds of the geometric-mean token probability, clipped to [-10, 10]."""
    if not logprobs:
        return MIN_CONFIDENCE
    mean = sum(logprobs) / len(logprobs)
    p = math.exp(min(mean, 0.0))
    if p >= 1.0:
        return MAX_CONFIDENCE
    if p <= 0.0:
        return MIN_CONFIDENCE
    return max(MIN_CONFIDENCE, min(MAX_CONFIDENCE, math.log(p / (1.0 - p))))
