"""θ from data: SearChain's verification threshold, chosen per reader on gold chains.

SearChain overrules the LLM's answer to a node when the reader's confidence ``f > θ`` (the paper
uses θ = 1.5 for DPR's relevance logit). Every reader has its own scale, and the same scale means
different things for different models, so θ is worth choosing on data. :func:`calibrate` does it
with the oracle-chain benchmark (:mod:`searchain_graph.evaluation.oracle`): dev questions' gold
decompositions become nodes, some sub-answers replaced by wrong ones, some marked unsolved; each
node is retrieved and read once, and the outcome at every θ of a grid follows from *f*. Then
:func:`choose_threshold` applies the rule:

    **Among the θ that break at most ``max_broken`` (5%) of the correct nodes, take the one that
    repairs the most wrong nodes; on a tie, the one that completes more unsolved nodes, then the
    higher θ. When no θ breaks that few, take the one that breaks the fewest (on a tie, the one
    that repairs more, then the higher θ), and say that it does not meet the bound.**

Breaking a correct answer costs more than leaving a wrong one (the LLM was right; the chain's
other steps were built on it), hence a bound on the one and a maximum of the other. The higher θ
wins ties because it fires less on data not seen here. Since *f* does not depend on θ, the
outcome changes only where θ crosses an observed *f*: :func:`threshold_grid` takes the
quantiles of the observed *f* (every 5%, plus 97.5% and 99%) and the paper's 1.5, so the grid
follows the reader's scale, whatever it is.

The chosen θ is saved per reader (:mod:`searchain_graph.ir.readers.calibration`) and
:func:`~searchain_graph.method.graph.create_searchain_graph` picks it up. ``searchain calibrate``
runs all of this from the command line.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from langchain_core.retrievers import BaseRetriever

from searchain_graph.evaluation.dataset_loading import corpus_paragraphs
from searchain_graph.evaluation.datasets import Example
from searchain_graph.evaluation.oracle import build_oracle_nodes, read_oracle_nodes, render_sweep, sweep
from searchain_graph.ir.readers.base import Reader, reader_traits
from searchain_graph.ir.readers.calibration import reader_key
from searchain_graph.method.graph import reader_settings
from searchain_graph.method.verdict import DEFAULT_THRESHOLD

DEFAULT_MAX_BROKEN = 0.05
"""Share of correct nodes a θ may break and still be chosen."""

QUANTILES = tuple(i / 20 for i in range(20)) + (0.975, 0.99, 1.0)
"""Quantile levels of the observed *f* in :func:`threshold_grid`."""

RULE = (
    "among the θ breaking at most {bound} of correct nodes, the one repairing the most wrong nodes "
    "(ties: more unsolved nodes completed, then the higher θ); if none breaks that few, the one "
    "breaking the fewest"
)
"""The rule of :func:`choose_threshold`, in one sentence (``{bound}`` is ``max_broken``)."""


class Choice(NamedTuple):
    """What :func:`choose_threshold` picked.

    Attributes:
        threshold: The chosen θ.
        row: Its index in the sweep's rows.
        qualified: Whether it breaks at most ``max_broken`` of correct nodes (False: no θ did,
            and this is the one that breaks the fewest).
        reason: One sentence that says why.
    """

    threshold: float
    row: int
    qualified: bool
    reason: str


def rule_text(max_broken: float = DEFAULT_MAX_BROKEN) -> str:
    """:data:`RULE` with the bound filled in."""
    return RULE.format(bound=f"{100 * max_broken:g}%")


def choose_threshold(rows: Sequence[Mapping[str, Any]], *, max_broken: float = DEFAULT_MAX_BROKEN) -> Choice:
    """Pick θ from the rows of :func:`~searchain_graph.evaluation.oracle.sweep` by the rule.

    The rule (see the module docstring): among the θ whose ``correct_broken`` is at most
    ``max_broken``, the one with the highest ``wrong_repaired``; ties go to the higher
    ``unsolved_completed``, then to the higher θ. When no θ qualifies: the lowest
    ``correct_broken`` (ties: the higher ``wrong_repaired``, then the higher θ), with
    ``qualified=False``.

    Raises:
        ValueError: ``rows`` is empty, or ``max_broken`` is not in [0, 1].
    """
    if not rows:
        raise ValueError("no θ to choose from: the sweep has no rows")
    if not 0.0 <= max_broken <= 1.0:
        raise ValueError(f"max_broken must lie in [0, 1], got {max_broken!r}")
    ok = [i for i, r in enumerate(rows) if r["correct_broken"] <= max_broken + 1e-12]
    bound = f"{100 * max_broken:g}%"
    if ok:
        best = max(ok, key=lambda i: (rows[i]["wrong_repaired"], rows[i]["unsolved_completed"], rows[i]["theta"]))
        r = rows[best]
        reason = (
            f"θ = {r['theta']:g} repairs the most wrong nodes ({100 * r['wrong_repaired']:.1f}%) among the "
            f"{len(ok)} of {len(rows)} θ breaking at most {bound} of correct nodes "
            f"(it breaks {100 * r['correct_broken']:.1f}%)"
        )
        return Choice(float(r["theta"]), best, True, reason)
    best = max(
        range(len(rows)), key=lambda i: (-rows[i]["correct_broken"], rows[i]["wrong_repaired"], rows[i]["theta"])
    )
    r = rows[best]
    reason = (
        f"no θ breaks at most {bound} of correct nodes; θ = {r['theta']:g} breaks the fewest "
        f"({100 * r['correct_broken']:.1f}%) and repairs {100 * r['wrong_repaired']:.1f}% of wrong nodes"
    )
    return Choice(float(r["theta"]), best, False, reason)


def threshold_grid(
    confidences: Sequence[float | None], *, extra: Sequence[float] = (DEFAULT_THRESHOLD,)
) -> list[float]:
    """θ to sweep: the :data:`QUANTILES` of the observed *f*, rounded to 0.01, plus ``extra``.

    The lowest quantile is the smallest *f* (θ there fires on every other node), the highest the
    largest (θ there fires on none: verification off).
    """
    fs = sorted(float(f) for f in confidences if f is not None)
    grid = {round(float(t), 2) for t in extra}
    if fs:
        for q in QUANTILES:
            pos = q * (len(fs) - 1)
            lo = int(pos)
            hi = min(lo + 1, len(fs) - 1)
            grid.add(round(fs[lo] + (fs[hi] - fs[lo]) * (pos - lo), 2))
    return sorted(grid)


@dataclass
class Calibration:
    """The result of :func:`calibrate`: the chosen θ, the rule, the whole table and its data.

    Attributes:
        threshold: The chosen θ.
        qualified: Whether it meets the bound on broken correct nodes (see :class:`Choice`).
        reason: Why it was chosen, in one sentence.
        max_broken: The bound used.
        rows: The sweep, one row per θ (:func:`~searchain_graph.evaluation.oracle.sweep`).
        chosen: The chosen row's index in ``rows``.
        nodes: The oracle nodes, read (``g``, ``f``, ``hit``, ``document``).
        key: The reader's calibration key.
        seconds: Time spent retrieving and reading.
        settings: What the nodes were built from (fractions, seed, number of questions, and
            whatever the caller passed as ``source``: dataset, file, limit).
    """

    threshold: float
    qualified: bool
    reason: str
    max_broken: float
    rows: list[dict[str, Any]]
    chosen: int
    nodes: list[dict[str, Any]]
    key: str
    seconds: float
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def rule(self) -> str:
        """The rule that chose θ, with its bound."""
        return rule_text(self.max_broken)

    @property
    def counts(self) -> dict[str, int]:
        """Nodes by condition, and how many were read (had a passage, hence an *f*)."""
        by = {c: sum(1 for n in self.nodes if n["condition"] == c) for c in ("correct", "wrong", "unsolved")}
        read = sum(1 for n in self.nodes if n.get("f") is not None)
        return {"nodes": len(self.nodes), **by, "read": read}

    def record(self) -> dict[str, Any]:
        """What is saved with θ: the rule, the choice, the table, the counts and the data (JSON-ready)."""
        fs = [float(n["f"]) for n in self.nodes if n.get("f") is not None]
        return {
            "rule": self.rule,
            "qualified": self.qualified,
            "reason": self.reason,
            "max_broken": self.max_broken,
            "chosen_row": self.rows[self.chosen],
            "rows": self.rows,
            "counts": self.counts,
            "f_median": statistics.median(fs) if fs else None,
            "settings": self.settings,
        }

    def summary(self) -> str:
        """One line: θ, for which reader, and why."""
        return f"for {self.key}, {self.reason}."

    def render(self, *, reader_name: str | None = None) -> str:
        """The table in Markdown, the chosen row marked, after the rule and the choice."""
        name = reader_name or self.key
        return f"Rule: {self.rule}.\n\nChosen {self.summary()}\n\n" + render_sweep(
            self.rows, self.nodes, reader_name=name, chosen=self.chosen
        )


def dataset_retriever(
    examples: Sequence[Example], *, index: str | None = None, corpus: Sequence[str] | None = None, k: int = 1
) -> BaseRetriever:
    """The retriever for dataset questions, top ``k``.

    ``index``, else BM25 over ``corpus`` files, else BM25 over the dataset's own paragraphs (all
    questions', as ``searchain eval`` does).

    Raises:
        ValueError: no index or corpus is given and the examples carry no paragraphs.
    """
    from searchain_graph.ir.bm25.retriever import BM25Retriever
    from searchain_graph.ir.index import load_index

    if index:
        return load_index(index, k=k)
    if corpus:
        return BM25Retriever.from_files(list(corpus), k=k)
    paragraphs = corpus_paragraphs(examples)
    if not paragraphs:
        raise ValueError("the dataset carries no paragraphs: pass --index DIR or --corpus FILE")
    return BM25Retriever.from_documents(paragraphs, k=k)


def calibrate(
    examples: Sequence[Example],
    retriever: BaseRetriever,
    reader: Reader,
    *,
    max_broken: float = DEFAULT_MAX_BROKEN,
    wrong_fraction: float = 0.3,
    unsolved_fraction: float = 0.2,
    seed: int = 0,
    thresholds: Sequence[float] | None = None,
    source: Mapping[str, Any] | None = None,
    also: Sequence[tuple[Sequence[Example], BaseRetriever]] = (),
) -> Calibration:
    """Choose θ for ``reader`` on dev questions with gold decompositions.

    Builds the oracle nodes (:func:`~searchain_graph.evaluation.oracle.build_oracle_nodes`),
    retrieves and reads each once, sweeps θ over ``thresholds`` (default :func:`threshold_grid`
    of the observed *f*, with the paper's 1.5 and the reader's ``default_threshold``) and applies
    :func:`choose_threshold`. Nothing is saved: see
    :func:`searchain_graph.ir.readers.calibration.save_threshold`.

    Args:
        examples: Dev questions; those with a gold decomposition give nodes.
        retriever: Its first document is the passage read for each node.
        reader: The reader to calibrate.
        max_broken: The bound of the rule on broken correct nodes.
        wrong_fraction: Share of sub-answers replaced by wrong ones.
        unsolved_fraction: Share of nodes marked unsolved.
        seed: Seed of the perturbation.
        thresholds: θ to sweep instead of the derived grid.
        source: Where the examples come from (dataset, file, limit), kept in ``settings``.
        also: More ``(examples, retriever)`` pairs (other dev sets, each with its own
            retriever): their nodes are pooled with the first set's before the sweep.

    Raises:
        ValueError: no example yields a node, or the fractions or ``max_broken`` are out of range.
    """
    if not 0.0 <= max_broken <= 1.0:
        raise ValueError(f"max_broken must lie in [0, 1], got {max_broken!r}")
    nodes: list[dict[str, Any]] = []
    start = time.perf_counter()
    for part, part_retriever in [(examples, retriever), *also]:
        if not any(ex.get("decomposition") for ex in part):
            continue
        part_nodes = build_oracle_nodes(
            part, wrong_fraction=wrong_fraction, unsolved_fraction=unsolved_fraction, seed=seed
        )
        nodes += read_oracle_nodes(part_nodes, part_retriever, reader)
    if not nodes:
        raise ValueError("no example has a gold decomposition with sub-answers (use MuSiQue, 2Wiki or Bamboogle)")
    seconds = time.perf_counter() - start
    graph_settings, _ = reader_settings(reader)
    if thresholds is None:
        own = reader_traits(reader).default_threshold
        extra = {DEFAULT_THRESHOLD, DEFAULT_THRESHOLD if own is None else own}
        thresholds = threshold_grid([n.get("f") for n in nodes], extra=sorted(extra))
    rows = sweep(nodes, sorted({float(t) for t in thresholds}), settings=graph_settings)
    choice = choose_threshold(rows, max_broken=max_broken)
    settings = {
        **(source or {}),
        "questions": len(examples) + sum(len(part) for part, _ in also),
        "wrong_fraction": wrong_fraction,
        "unsolved_fraction": unsolved_fraction,
        "seed": seed,
    }
    return Calibration(
        threshold=choice.threshold,
        qualified=choice.qualified,
        reason=choice.reason,
        max_broken=max_broken,
        rows=rows,
        chosen=choice.row,
        nodes=nodes,
        key=reader_key(reader),
        seconds=seconds,
        settings=settings,
    )
