"""Paired comparisons of two methods on the same questions: bootstrap interval and McNemar's test.

Two methods answered the same questions; each answer is right or wrong. The difference in accuracy
is a paired quantity: :func:`paired_difference` resamples questions (not answers) to put a 95%
interval on it, and counts the discordant pairs for McNemar's exact test. A claim that one method
beats another holds at this sample only when the interval excludes 0.

A share of items that come several to a question (IR's changed nodes, say) is not a share of
independent draws: :func:`clustered_share` resamples the questions, so the interval is as wide as
the questions make it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PairedDifference", "Share", "clustered_share", "mcnemar_exact", "paired_difference"]


@dataclass(frozen=True)
class PairedDifference:
    """Method A's accuracy minus method B's, over the questions both answered.

    Attributes:
        questions: Questions both answered.
        a_only: Questions A got right and B wrong.
        b_only: Questions B got right and A wrong.
        difference: Accuracy of A minus accuracy of B, in points (0-100).
        low: Lower end of the 95% bootstrap interval, in points.
        high: Upper end of the 95% bootstrap interval, in points.
        p_value: McNemar's exact two-sided p-value (binomial on the discordant pairs).
    """

    questions: int
    a_only: int
    b_only: int
    difference: float
    low: float
    high: float
    p_value: float

    @property
    def excludes_zero(self) -> bool:
        """The 95% interval lies wholly above or wholly below 0."""
        return self.low > 0 or self.high < 0


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """McNemar's exact two-sided p-value for ``a_only`` and ``b_only`` discordant pairs."""
    n = a_only + b_only
    if n == 0:
        return 1.0
    k = min(a_only, b_only)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / (1 << n)
    return min(1.0, 2 * tail)


def paired_difference(
    a: Sequence[bool], b: Sequence[bool], *, resamples: int = 10_000, seed: int = 0
) -> PairedDifference:
    """A minus B on paired outcomes (``a[i]`` and ``b[i]`` answer the same question).

    Args:
        a: Whether method A answered each question right.
        b: Whether method B answered the same question right.
        resamples: Bootstrap resamples of the questions.
        seed: The resampling seed (the interval is reproducible).

    Raises:
        ValueError: ``a`` and ``b`` differ in length, or are empty.
    """
    if len(a) != len(b):
        raise ValueError(f"paired outcomes must have one entry per question each, got {len(a)} and {len(b)}")
    if not a:
        raise ValueError("no questions to compare")
    n = len(a)
    deltas = [int(bool(x)) - int(bool(y)) for x, y in zip(a, b, strict=True)]
    rng = np.random.default_rng(seed)
    low, high = _percentiles(np.asarray(deltas, dtype=np.int8)[rng.integers(0, n, size=(resamples, n))].mean(axis=1))
    a_only = sum(1 for d in deltas if d > 0)
    b_only = sum(1 for d in deltas if d < 0)
    return PairedDifference(
        questions=n,
        a_only=a_only,
        b_only=b_only,
        difference=100 * sum(deltas) / n,
        low=100 * low,
        high=100 * high,
        p_value=mcnemar_exact(a_only, b_only),
    )


@dataclass(frozen=True)
class Share:
    """A share of items counted over questions, with a 95% interval from resampling the questions.

    Attributes:
        hits: Items that count, over all questions.
        total: Items in all, over all questions.
        percent: ``hits`` over ``total``, in percent.
        low: Lower end of the 95% bootstrap interval, in percent.
        high: Upper end of the 95% bootstrap interval, in percent.
    """

    hits: int
    total: int
    percent: float
    low: float
    high: float


def clustered_share(hits: Sequence[int], totals: Sequence[int], *, resamples: int = 10_000, seed: int = 0) -> Share:
    """The share ``sum(hits) / sum(totals)``, with an interval that resamples questions, not items.

    Args:
        hits: Per question, the items that count (IR's changed nodes that misled, say).
        totals: Per question, the items in all (the nodes IR changed); a question with none may be given.
        resamples: Bootstrap resamples of the questions.
        seed: The resampling seed (the interval is reproducible).

    Raises:
        ValueError: ``hits`` and ``totals`` differ in length, a count is negative or above its
            total, or there are no items at all.
    """
    if len(hits) != len(totals):
        raise ValueError(f"hits and totals must have one entry per question each, got {len(hits)} and {len(totals)}")
    if any(h < 0 or h > t for h, t in zip(hits, totals, strict=True)):
        raise ValueError("each question's hits must lie between 0 and its total")
    if sum(totals) == 0:
        raise ValueError("no items to share: every question's total is 0")
    h, t = np.asarray(hits, dtype=np.int64), np.asarray(totals, dtype=np.int64)
    rng = np.random.default_rng(seed)
    drawn = rng.integers(0, len(h), size=(resamples, len(h)))
    drawn_totals = t[drawn].sum(axis=1)
    has_items = drawn_totals > 0  # a resample of only questions without items has no share
    low, high = _percentiles(h[drawn].sum(axis=1)[has_items] / drawn_totals[has_items])
    return Share(
        hits=int(h.sum()),
        total=int(t.sum()),
        percent=100 * float(h.sum()) / float(t.sum()),
        low=100 * low,
        high=100 * high,
    )


def _percentiles(resampled: np.ndarray) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of a statistic's bootstrap resamples (the 95% interval)."""
    ordered = np.sort(resampled)
    last = len(ordered) - 1
    return float(ordered[int(0.025 * last)]), float(ordered[int(math.ceil(0.975 * last))])
