"""When the reader is unsure: what SearChain's nodes passed under θ hold, and what other rules could reach.

Algorithm 1 lets the LLM's answer stand when the reader's confidence *f* is not above θ, whatever
the passage says. This reads SearChain's records (their paths keep each node's passage, *g* and
*f*) against the dataset's paragraphs and counts, for the questions answered right and wrong:

* the questions with a node on the final path whose LLM answer passed with ``f <= θ``;
* of those, the ones with such a node whose passage lacks at least half of its answer's words
  (SQuAD-normalised), where a containment test of the answer against the passage would act;
* of those, the ones where that node's *g* is a gold answer (taking *g* there, as completion
  does, could gain the question) and where its passage holds a gold answer (a new round given
  the passage could find it).

No LLM is called: each figure is a ceiling on what the rule can change, not a paired run. A rule
worth a run gains on the wrong answers and leaves the right ones.

    python benchmarks/unsure_nodes.py --data ../shared/data/hotpotqa/hotpotqa_validation.choose.jsonl \\
        --records docs/results/qwen/choose/hotpotqa-searchain.jsonl

Choose on the choose set's records only, never on a report set's.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchain_graph.evaluation.dataset_loading import detect_dataset, load_dataset
from searchain_graph.evaluation.harness import read_records
from searchain_graph.evaluation.report import latest_records
from searchain_graph.method.parsing import answer_contains, normalize_answer

SUPPORTED_SHARE = 0.5
"""A passage supports an answer that has at least this share of its words."""

ROWS = (
    ("questions", "all"),
    ("a path node passed with f <= θ", "under"),
    ("... whose passage lacks half its answer's words (a containment test acts)", "lacks"),
    ("... ... and whose g is a gold answer (taking g could gain)", "g_gold"),
    ("... ... and whose passage holds a gold answer (a new round could find it)", "passage_gold"),
)


def word_share(passage: str, answer: str) -> float:
    """The share of the answer's normalised words that the passage has (1.0 for an empty answer)."""
    words = normalize_answer(answer).split()
    present = set(normalize_answer(passage).split())
    return sum(w in present for w in words) / len(words) if words else 1.0


def passage_of(ref: dict[str, Any], paragraphs: dict[str, str]) -> str:
    """A path entry's whole passage (the record keeps a snippet), with its title."""
    document = ref.get("document") or {}
    title = str((document.get("metadata") or {}).get("title") or "")
    return f"{title} {paragraphs.get(title, document.get('page_content') or '')}"


def classify(record: dict[str, Any], paragraphs: dict[str, str], theta: float) -> set[str]:
    """The rows of :data:`ROWS` this record counts in."""
    rows = {"all"}
    golds: Sequence[str] = record["answers"]
    path = (record.get("tree") or {}).get("references") or []
    under = [
        ref
        for ref in path
        if ref.get("source") == "llm" and ref.get("confidence") is not None and ref["confidence"] <= theta
    ]
    if not under:
        return rows
    rows.add("under")
    lacking = [
        ref for ref in under if word_share(passage_of(ref, paragraphs), ref.get("answer") or "") < SUPPORTED_SHARE
    ]
    if not lacking:
        return rows
    rows.add("lacks")
    if any(g and answer_contains(ref.get("reader_answer") or "", g) for ref in lacking for g in golds):
        rows.add("g_gold")
    if any(answer_contains(passage_of(ref, paragraphs), g) for ref in lacking for g in golds):
        rows.add("passage_gold")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the dataset file the records were run on")
    parser.add_argument("--records", required=True, type=Path, help="SearChain records (JSONL)")
    parser.add_argument("--theta", type=float, help="θ (default: each node's own, from its check)")
    args = parser.parse_args()

    examples = {e["qid"]: e for e in load_dataset(detect_dataset(args.data), args.data)}
    records = [
        r
        for r in latest_records(read_records(args.records))
        if r.get("method") == "searchain" and r.get("tree") and r.get("qid") in examples
    ]
    counts = {kind: dict.fromkeys([key for _, key in ROWS], 0) for kind in ("right", "wrong")}
    for record in records:
        paragraphs = {p["title"]: p["text"] for p in examples[record["qid"]]["paragraphs"]}
        theta = args.theta if args.theta is not None else record_theta(record)
        kind = "right" if record["metrics"]["cover_em"] else "wrong"
        for row in classify(record, paragraphs, theta):
            counts[kind][row] += 1
    print(f"{len(records)} SearChain record(s) of {args.records}")
    print("| questions | answered right | answered wrong |")
    print("|---|---:|---:|")
    for label, key in ROWS:
        print(f"| {label} | {counts['right'][key]} | {counts['wrong'][key]} |")


def record_theta(record: dict[str, Any]) -> float:
    """The θ the record's checks were decided at (the run's, kept on each check)."""
    for branch in (record.get("tree") or {}).get("tree") or []:
        for check in branch.get("checks") or []:
            if check.get("threshold") is not None:
                return float(check["threshold"])
    raise ValueError(f"record {record.get('qid')!r} keeps no θ: pass --theta")


if __name__ == "__main__":
    main()
