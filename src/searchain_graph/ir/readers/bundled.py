"""The reader that ships with the package: a small DPR reader, offline, with a measured θ.

SearChain's reader is DPR's (Section 3.3): a cross-encoder over ``[CLS] question [SEP] title
[SEP] text`` that extracts the answer *g* (span head) and scores how likely the passage is to
answer the question (relevance head, SearChain's *f*). :class:`BundledReader` is that
architecture (``transformers.DPRReader``) at all-MiniLM-L6-v2's size (6 layers, 384 wide, 22M
parameters), trained by ``training/train_reader.py`` on SQuAD v1.1 train with a negative passage
for every question (BM25's best wrong paragraph, or another paragraph of the same article), so
its relevance logit is the log-odds that this one passage answers the question. The weights are
in the package (fp16, about 45 MB), with a model card (``README.md`` beside them); nothing is
fetched.

Its *f* is by default ``"joint"``: the relevance logit plus the log-probability of the span it
extracts (:class:`~searchain_graph.ir.readers.dpr.DPRReader`'s ``confidence``). The paper's
relevance logit alone says whether the passage answers, not whether this small reader found the
words that do; on the oracle chains the joint *f* ranks right *g* above wrong *g* better and
repairs more wrong nodes at the same share of correct ones broken (``docs/reader.md``).
``confidence="relevance"`` gives the paper's *f*.

θ is not the paper's 1.5, which belongs to DPR's own scale: it was chosen on the gold chains of
2WikiMultihopQA's train-split dev questions (which no result reports) by the calibration rule of
:mod:`searchain_graph.evaluation.calibration`, for each *f*, and is stored beside the weights
(``calibration.json`` for the joint *f*, ``calibration-relevance.json`` for the relevance logit);
:attr:`BundledReader.default_threshold` reads the one for the reader's *f*.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from searchain_graph.ir.readers.dpr import Confidence, DPRReader
from searchain_graph.llms.hub import ModelNotFoundError

__all__ = ["BUNDLED_READER_DIR", "DEFAULT_WINDOW", "BundledReader", "bundled_threshold", "trained_window"]

BUNDLED_READER_DIR = Path(__file__).with_name("minilm_dpr")
"""Where the bundled weights, tokenizer, model card and calibration live."""

FALLBACK_THRESHOLD = 0.0
"""θ when ``calibration.json`` is missing: even odds that the passage answers."""


def _calibration_file(directory: Path = BUNDLED_READER_DIR, confidence: Confidence = "joint") -> Path:
    """The calibration of one kind of *f*, stored beside a directory of bundled-reader weights."""
    return directory / ("calibration.json" if confidence == "joint" else f"calibration-{confidence}.json")


DEFAULT_WINDOW = 192
"""Window length (tokens) for weights whose ``training.json`` does not name theirs."""


def trained_window(directory: Path = BUNDLED_READER_DIR) -> int:
    """The window length the weights in ``directory`` were trained at (``training.json``).

    Read from its ``max_length`` (or ``args.max_length``); :data:`DEFAULT_WINDOW` when the file
    or the field is missing or unusable, so a directory of other weights still loads.
    """
    try:
        meta = json.loads((directory / "training.json").read_text(encoding="utf-8"))
        value = meta.get("max_length", (meta.get("args") or {}).get("max_length"))
        window = int(value)
    except (OSError, ValueError, TypeError, AttributeError):
        return DEFAULT_WINDOW
    return window if 64 <= window <= 512 else DEFAULT_WINDOW


@cache
def bundled_threshold(directory: Path = BUNDLED_READER_DIR, confidence: Confidence = "joint") -> float:
    """The calibrated θ stored with the bundled weights (``FALLBACK_THRESHOLD`` without one)."""
    path = _calibration_file(directory, confidence)
    if not path.is_file():
        return FALLBACK_THRESHOLD
    return float(json.loads(path.read_text(encoding="utf-8"))["threshold"])


class _Threshold:
    """``default_threshold`` read from the calibration file on first use."""

    def __get__(self, obj: Any, owner: type) -> float:
        if obj is None:
            return bundled_threshold(BUNDLED_READER_DIR)
        return bundled_threshold(Path(obj.model_name), obj.confidence)


class BundledReader(DPRReader):
    """The offline default reader: a DPR reader on all-MiniLM-L6-v2, shipped in the package.

    Reads as :class:`~searchain_graph.ir.readers.dpr.DPRReader` does (same layout, windows and
    batching), in windows of the length it was trained at (``training.json``; 320 tokens for the
    shipped weights, stride a third of that). The model runs in fp32
    (the file is fp16, which CPUs run slowly).

    Args:
        model: Another directory with weights of the same kind (default: the bundled ones).
        confidence: What *f* is: ``"joint"`` (default; relevance logit plus the span's
            log-probability) or ``"relevance"`` (the paper's). Each has its own calibrated θ.
        **kwargs: As for :class:`~searchain_graph.ir.readers.dpr.DPRReader`.

    Raises:
        ModelNotFoundError: (on load) the bundled weights are missing from this installation.

    Example:
        >>> reader = BundledReader()  # doctest: +SKIP
        >>> reader.read("Where was Kevin Drew born?", "Kevin Drew was born in Toronto.")  # doctest: +SKIP
        ReaderOutput(answer='Toronto', confidence=3.78)
    """

    default_threshold = _Threshold()
    _what = "bundled reader"

    def __init__(
        self, model: str | Path = BUNDLED_READER_DIR, *, confidence: Confidence = "joint", **kwargs: Any
    ) -> None:
        kwargs.setdefault("max_length", trained_window(Path(model)))
        kwargs.setdefault("stride", kwargs["max_length"] // 3)
        kwargs.setdefault("max_query_tokens", 32)
        super().__init__(model, confidence=confidence, **kwargs)

    @property
    def threshold_source(self) -> str:
        """Where :attr:`default_threshold` comes from, for logs and run metadata."""
        path = _calibration_file(Path(self.model_name), self.confidence)
        if not path.is_file():
            return "reader default (no calibration.json)"
        return f"calibration shipped with the weights:{path}"

    @property
    def calibration_key(self) -> str:
        """Identifies the weights (by their training step) and *f* for saved calibrations."""
        info = Path(self.model_name) / "training.json"
        step = json.loads(info.read_text(encoding="utf-8")).get("step") if info.is_file() else None
        return f"bundled:{Path(self.model_name).name}:{step}:{self.confidence}"

    def _load(self, source: str) -> tuple[Any, Any]:
        if not (Path(source) / "model.safetensors").is_file():
            raise ModelNotFoundError(
                f"the bundled reader's weights are not in {source}; reinstall searchain-graph, "
                "or choose another reader (--reader llm|dpr|extractive)"
            )
        tokenizer, model = super()._load(source)
        return tokenizer, model.float()
