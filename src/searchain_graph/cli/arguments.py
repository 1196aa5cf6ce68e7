"""Argument types for counts and sizes, and the defaults that depend on other options.

A value out of range is argparse's error, naming the flag.

``type=positive_int`` makes ``--limit -1`` end as ``searchain eval: error: argument --limit: must be
at least 1, got -1`` (exit status 2) before the command does any work, where a bare ``int`` would
let Python's slicing read -1 as "all but the last".
"""

from __future__ import annotations

import argparse

__all__ = [
    "DEFAULT_RERANK",
    "non_negative_float",
    "non_negative_int",
    "positive_float",
    "positive_int",
    "rerank_depth",
    "rerank_of",
]

DEFAULT_RERANK = 5
"""``--rerank`` left out, with the tuned preset and the bundled reader: its top 5 re-ranked (chosen on
development questions: the node's passage held a supporting paragraph more often, for every method)."""


def _int_at_least(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be at least {low}, got {value}")
    return value


def _float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """A count that must be 1 or more (questions, workers, runs at once, tokens)."""
    return _int_at_least(text, 1)


def non_negative_int(text: str) -> int:
    """A count that may be 0 (questions skipped)."""
    return _int_at_least(text, 0)


def positive_float(text: str) -> float:
    """A finite amount above 0 (seconds of a timeout)."""
    value = _float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def non_negative_float(text: str) -> float:
    """A finite amount of 0 or more (seconds of grace)."""
    value = _float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {text}")
    return value


def rerank_depth(text: str) -> int:
    """How many passages the reader re-ranks: 0 (none, the paper's top 1) or 2 and more."""
    value = _int_at_least(text, 0)
    if value == 1:
        raise argparse.ArgumentTypeError("must be 0 (no re-ranking) or at least 2, got 1")
    return value


def rerank_of(args: argparse.Namespace) -> int:
    """The passages the reader re-ranks for a command: ``--rerank``, else the default for its preset and reader.

    Left out, it is :data:`DEFAULT_RERANK` with the tuned preset (the default) and the bundled reader,
    and 0 with ``--preset paper`` (the paper's top 1) or another reader (an LLM reading five passages
    per query costs five calls).
    """
    given = getattr(args, "rerank", None)
    if given is not None:
        return int(given)
    tuned = (getattr(args, "preset", None) or "tuned") == "tuned"
    bundled = str(getattr(args, "reader", "") or "").split(":")[0] == "bundled"
    return DEFAULT_RERANK if tuned and bundled else 0
