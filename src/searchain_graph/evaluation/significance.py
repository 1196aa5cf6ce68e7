"""Paired comparisons of two methods on the same questions: bootstrap interval and McNemar's test.

Two methods answered the same questions; each answer is right or wrong. The difference in accuracy
is a paired quantity: :func:`paired_difference` resamples questions (not answers) to put a 95%
interval on it, and counts the discordant pairs for McNemar's exact test. A claim that one method
beats another holds at this sample only when the interval excludes 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["PairedDifference", "mcnemar_exact", "paired_difference"]


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
    means = np.sort(np.asarray(deltas, dtype=np.int8)[rng.integers(0, n, size=(resamples, n))].mean(axis=1))
    low = float(means[int(0.025 * (resamples - 1))])
    high = float(means[int(math.ceil(0.975 * (resamples - 1)))])
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
