"""IR's changes judged node by node, against the gold the datasets give.

Sections of :func:`~searchain_graph.evaluation.report.render_report`, from SearChain's records:

* :func:`node_changes_section`: each node IR changed on the final path, judged against the
  question's gold supporting paragraphs (:func:`judge_change`) and, where the dataset gives
  them, its gold sub-answers (:func:`judge_by_answers`);
* :func:`threshold_section`: every read of an answered node by band of the reader's *f*, judged
  by the gold sub-answers: how much help θ leaves unused below it and lets through above it.

The gold comes with each record (``supporting``, ``hop_answers``:
:func:`~searchain_graph.evaluation.harness.gold_fields`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from searchain_graph.evaluation.comparisons import IR_CHANGED, branches, kept, section, share
from searchain_graph.evaluation.significance import clustered_share
from searchain_graph.method.parsing import answer_contains, normalize_answer

__all__ = [
    "F_BANDS",
    "JUDGES",
    "judge_by_answers",
    "judge_change",
    "node_changes_section",
    "node_said",
    "node_verdicts",
    "threshold_section",
]


def node_said(record: dict[str, Any], reference: dict[str, Any]) -> str | None:
    """The LLM's answer at the node IR corrected (``None`` for a completion, or a node not in the tree)."""
    if reference.get("source") != "corrected":
        return None
    return next(
        (
            n.get("answer")
            for b in branches(record)
            if b.get("round") == reference.get("round")
            for n in b.get("nodes") or []
            if n.get("query") == reference.get("query")
        ),
        None,
    )


def judge_change(record: dict[str, Any], reference: dict[str, Any]) -> str:
    """Whether IR's change of one node helped, misled or was neutral, by the gold supporting paragraphs.

    * ``helps``: the passage IR took its answer from is a supporting paragraph of the question;
    * ``misleads``: it is not, and the LLM's answer it replaced is in a supporting paragraph
      (the LLM was right, by the data's own evidence);
    * ``neutral``: neither (a completion from another paragraph; an LLM answer with no support).
    """
    gold = record.get("supporting") or []
    title = ((reference.get("document") or {}).get("metadata") or {}).get("title")
    if title is not None and any(g["title"] == title for g in gold):
        return "helps"
    said = node_said(record, reference) or ""
    if said and any(answer_contains(g["text"], said) or answer_contains(said, g["title"]) for g in gold):
        return "misleads"
    return "neutral"


def _states(text: str | None, value: str, query: str) -> bool:
    """Whether ``text`` gives the gold ``value``: contains it, or is a part of it ("Pirates", "Pittsburgh Pirates").

    A text the node's ``query`` already contains gives nothing (it restates the question).
    """
    text = text or ""
    if not normalize_answer(text) or answer_contains(query, text):
        return False
    return answer_contains(text, value) or answer_contains(value, text)


def judge_by_answers(record: dict[str, Any], reference: dict[str, Any]) -> str | None:
    """Whether IR's change of one node helped, misled or was neutral, by the gold sub-answers.

    Stricter than :func:`judge_change`, which counts a change as helping whenever IR read a
    supporting paragraph, whatever it took from it (MuSiQue: Eugene V. Debs' page read, and
    "trade unionist" taken for his party). The gold values are the answers of the question's decomposition (the record's
    ``hop_answers``: MuSiQue's sub-answers, 2Wiki's evidence objects) and the final answers, less
    any value the node's query already states (it is not what the node asks):

    * ``helps``: IR's *g* gives a gold value and the LLM's replaced answer does not (a completion:
      the LLM had none);
    * ``misleads``: the LLM's replaced answer gave a gold value and *g* does not;
    * ``neutral``: both or neither (the chain was on another entity; a spelling the match misses).

    Returns:
        The verdict, or ``None`` for a record without sub-answers (HotpotQA, StrategyQA).
    """
    if not record.get("hop_answers"):
        return None
    g = reference.get("reader_answer") or reference.get("answer")
    return _by_answers(record, str(reference.get("query") or ""), g, node_said(record, reference))


def _by_answers(record: dict[str, Any], query: str, g: str | None, said: str | None) -> str:
    """:func:`judge_by_answers` for a node's ``query``, IR's ``g`` and the LLM's answer ``said``."""
    values = [str(v) for v in [*(record.get("hop_answers") or []), *(record.get("answers") or [])]]
    gold = [v for v in values if normalize_answer(v) and not answer_contains(query, v)]
    ir_right = any(_states(g, v, query) for v in gold)
    llm_right = any(_states(said, v, query) for v in gold)
    if ir_right and not llm_right:
        return "helps"
    if llm_right and not ir_right:
        return "misleads"
    return "neutral"


JUDGES: tuple[str, ...] = ("supporting paragraphs", "sub-answers")
"""The judges of :func:`node_verdicts`: :func:`judge_change` and :func:`judge_by_answers`."""


def node_verdicts(record: dict[str, Any]) -> dict[str, list[str]]:
    """Each node IR changed on a record's final path, judged by each judge whose gold the record carries.

    Keyed by :data:`JUDGES`; a judge without gold in the record is left out. A record without its
    tree (:func:`~searchain_graph.evaluation.harness.without_text`) keeps the verdicts it was
    written with, as ``node_verdicts``.
    """
    if not record.get("tree"):
        return dict(kept(record, "node_verdicts") or {})
    changed = [ref for ref in record["tree"].get("references") or [] if ref.get("source") in IR_CHANGED]
    verdicts: dict[str, list[str]] = {}
    if record.get("supporting"):
        verdicts[JUDGES[0]] = [judge_change(record, ref) for ref in changed]
    if record.get("hop_answers"):
        verdicts[JUDGES[1]] = [v for ref in changed if (v := judge_by_answers(record, ref)) is not None]
    return verdicts


def node_changes_section(records: Sequence[dict[str, Any]], datasets: Sequence[str]) -> list[str]:
    """Per dataset, SearChain's changed nodes as helps / misleads / neutral, by each judge that applies.

    One row by the gold supporting paragraphs (:func:`judge_change`, records that carry them) and
    one by the gold sub-answers (:func:`judge_by_answers`, records that carry ``hop_answers``).
    """
    rows = []
    for dataset in datasets:
        verdicts = [node_verdicts(r) for r in records if r["method"] == "searchain" and r["dataset"] == dataset]
        for judge in JUDGES:
            per_record = [of_record.get(judge, []) for of_record in verdicts]
            judged = [v for of_record in per_record for v in of_record]
            if judged:
                cells = [share(judged.count(k), len(judged)) for k in ("helps", "misleads", "neutral")]
                misled = clustered_share([v.count("misleads") for v in per_record], [len(v) for v in per_record])
                cells.append(f"[{misled.low:.1f}, {misled.high:.1f}]")
                rows.append(f"| {dataset} | {judge} | {len(judged)} | " + " | ".join(cells) + " |")
    return section(
        "## IR's changes, node by node (against the gold supporting paragraphs and sub-answers)",
        rows,
        "By supporting paragraphs: helps when IR's passage is a supporting paragraph (whatever it took from it); "
        "misleads when it is not and the LLM's replaced answer is in one; neutral otherwise. By sub-answers "
        "(datasets whose questions come with a decomposition): helps when IR's g gives a gold sub-answer or final "
        "answer and the LLM's replaced answer does not; misleads the reverse; neutral when both or neither do. "
        "The misleads' 95% interval resamples the questions (a question's nodes are not independent draws).",
        "",
        "| dataset | judged by | nodes IR changed | helps | misleads | neutral | misleads, 95% interval |",
        "|---|---|---:|---:|---:|---:|---|",
    )


F_BANDS: tuple[float, ...] = (0.0, 2.0, 3.0, 4.0, 5.0, 6.0)
"""The edges of the reader's *f* bands in :func:`threshold_section` (the lowest band is f <= 0)."""


def _band(f: float) -> str:
    """The :data:`F_BANDS` band of ``f`` as a label ("f <= 0", "(2, 3]", "f > 6")."""
    if f <= F_BANDS[0]:
        return f"f <= {F_BANDS[0]:g}"
    for lo, hi in zip(F_BANDS, F_BANDS[1:], strict=False):
        if f <= hi:
            return f"({lo:g}, {hi:g}]"
    return f"f > {F_BANDS[-1]:g}"


def threshold_section(records: Sequence[dict[str, Any]], datasets: Sequence[str]) -> list[str]:
    """Per dataset and band of the reader's *f*, every read of an answered node, judged by the gold sub-answers.

    Verification corrects a node when *f* > θ and *g* disagrees with the LLM's answer; below θ the
    LLM's answer stands. For each read (checks ``pass`` and ``correction`` of every round; not
    completions, which ignore θ) :func:`judge_by_answers` asks what a correction did or would have
    done: *g* gives a gold value the LLM's answer lacks (a correction helps), the reverse (it
    misleads), or neither. A band under θ with many reads where *g* alone is right says θ leaves
    help unused; one above θ with misleads says θ lets them through. Records without
    ``hop_answers`` are left out.
    """
    rows = []
    for dataset in datasets:
        counts: dict[str, Counter[tuple[str, str]]] = {}
        for r in records:
            if r["method"] != "searchain" or r["dataset"] != dataset or not r.get("hop_answers"):
                continue
            for b in branches(r):
                nodes = {n.get("index"): n for n in b.get("nodes") or []}
                for check in b.get("checks") or []:
                    node = nodes.get(check.get("node"))
                    f = check.get("confidence")
                    if (
                        check.get("action") not in ("pass", "correction")
                        or f is None
                        or not node
                        or node.get("unsolved")
                    ):
                        continue
                    # what a correction of this node did, or would have done
                    verdict = _by_answers(
                        r, str(node.get("query") or ""), check.get("reader_answer"), node.get("answer")
                    )
                    counts.setdefault(_band(float(f)), Counter())[(check["action"], verdict)] += 1
        keys = [(a, v) for a in ("pass", "correction") for v in ("helps", "misleads", "neutral")]
        for band in [_band(F_BANDS[0]), *(_band(hi) for hi in F_BANDS[1:]), _band(F_BANDS[-1] + 1)]:
            if tally := counts.get(band):
                cells = " | ".join(str(tally[k]) for k in keys)
                rows.append(f"| {dataset} | {band} | {tally.total()} | {cells} |")
    return section(
        "## The reader's f and θ: every read of an answered node, judged by the gold sub-answers",
        rows,
        "Left: the LLM's answer stood (f <= θ, or g agreed with it); corrected: f > θ and g disagreed. "
        "g right: g gives a gold sub-answer or final answer that the LLM's answer lacks (a correction helps, or "
        "would have); LLM right: the reverse (a correction misleads, or would have); neither: both or neither give "
        "one (`judge_by_answers`). Datasets whose questions come with a decomposition only.",
        "",
        "| dataset | reader's f | reads | left: g right | left: LLM right | left: neither | corrected: g right "
        "| corrected: LLM right | corrected: neither |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    )
