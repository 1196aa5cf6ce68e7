"""Two configurations' records on the same questions, side by side: accuracy paired, and cost.

Each argument is ``LABEL=FILE[:METHOD]`` (METHOD defaults to ``searchain``; ``searchain/unrepaired``
rescores SearChain's records with the answer they had before the answer repairs that only SearChain
makes, the two-option and date-order repairs, read back from their warnings). The first is A, each
later one B: for every B, on the questions both answered without error, it prints cover-EM, EM
and F1 of each, A minus B with a paired 95% bootstrap interval and McNemar's exact p (cover-EM
and EM), and the mean LLM calls (and those answered from the LLM cache), tokens in and out, and
seconds a question. With ``--table``, one Markdown row for each B instead (an ablation table).
``--rows 101:251`` keeps the questions at those places of A's file (1-based, both ends kept): a
claim checked on questions the choices were not made on.

    python benchmarks/compare_records.py new=docs/results/qwen/choose/hotpotqa-saving.jsonl \\
        before=docs/results/qwen/choose/hotpotqa-base.jsonl
"""

from __future__ import annotations

import argparse
import ast
import re
import statistics
from typing import Any

from searchain_graph.evaluation.harness import read_records
from searchain_graph.evaluation.metrics import score
from searchain_graph.evaluation.report import latest_records
from searchain_graph.evaluation.significance import paired_difference

# The answer before each SearChain-only repair, as its warning names it (adaptations.options, .date_order).
_REPAIRED = (
    re.compile(r"the answer (?P<q>['\"])(?P<answer>.*?)(?P=q) named neither of the question's options"),
    re.compile(r"which replaces the answer (?P<q>['\"])(?P<answer>.*?)(?P=q)"),
)


def unrepaired(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` scored with its answer before SearChain's answer repairs (itself when none applied)."""
    for warning in record.get("warnings") or []:
        for pattern in _REPAIRED:
            found = pattern.search(warning)
            if found:
                before = ast.literal_eval(found.group("q") + found.group("answer") + found.group("q"))
                task = record.get("task") or "multihop"
                return {**record, "prediction": before, "metrics": score(before, record["answers"], task)}
    return record


def records_of(spec: str) -> tuple[str, dict[str, dict[str, Any]]]:
    """``LABEL=FILE[:METHOD]`` -> (label, records by question id, errors left out)."""
    label, _, rest = spec.partition("=")
    path, _, method = rest.partition(":")
    method, _, variant = (method or "searchain").partition("/")
    chosen = [r for r in latest_records(read_records(path)) if r["method"] == method and not r.get("error")]
    if variant == "unrepaired":
        chosen = [unrepaired(r) for r in chosen]
    elif variant:
        raise SystemExit(f"unknown variant {variant!r} in {spec!r}: the one variant is searchain/unrepaired")
    return label, {r["qid"]: r for r in chosen}


def row_range(text: str) -> tuple[int, int]:
    """``"101:251"`` -> (101, 251); an empty end is the file's end."""
    start, sep, end = text.partition(":")
    try:
        first, last = int(start), int(end) if end else 10**9
    except ValueError:
        first = last = 0
    if not sep or first < 1 or last < first:
        raise argparse.ArgumentTypeError(f"{text!r} is not START:END with 1 <= START <= END")
    return first, last


def cost(records: list[dict[str, Any]]) -> str:
    def mean(key: str) -> float:
        return statistics.mean(float((r.get("usage") or {}).get(key) or 0) for r in records)

    seconds = statistics.mean(float(r.get("seconds") or 0) for r in records)
    return (
        f"calls {mean('llm_calls'):.2f} (cached {mean('llm_cache_hits'):.2f}), tokens in {mean('input_tokens'):.0f} "
        f"out {mean('output_tokens'):.1f}, {seconds:.2f} s"
    )


def table(a_label: str, a: dict[str, dict[str, Any]], others: list[tuple[str, dict[str, dict[str, Any]]]]) -> str:
    """A Markdown table: for each B, n, B's cover-EM, A - B in cover-EM and EM (interval, p), and B's cost."""
    lines = [
        f"| B | n | B cover-EM | {a_label} − B cover-EM [95%] | gained / lost | p | {a_label} − B EM [95%] "
        "| same answer | B calls (new) | B tokens out | B seconds a question |",
        "|---|---:|---:|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for b_label, b in others:
        shared = sorted(set(a) & set(b))
        if not shared:
            lines.append(f"| {b_label} | 0 | | | | | | | | | |")
            continue
        rows = [b[q] for q in shared]
        diff = {
            m: paired_difference([a[q]["metrics"][m] >= 1 for q in shared], [b[q]["metrics"][m] >= 1 for q in shared])
            for m in ("cover_em", "em")
        }
        c, e = diff["cover_em"], diff["em"]
        usage = [r.get("usage") or {} for r in rows]
        calls = statistics.mean(float(u.get("llm_calls") or 0) for u in usage)
        made = calls - statistics.mean(float(u.get("llm_cache_hits") or 0) for u in usage)
        lines.append(
            f"| {b_label} | {len(shared)} | {100 * statistics.mean(r['metrics']['cover_em'] for r in rows):.1f} "
            f"| {c.difference:+.1f} [{c.low:+.1f}, {c.high:+.1f}] | {c.a_only} / {c.b_only} | {c.p_value:.2f} "
            f"| {e.difference:+.1f} [{e.low:+.1f}, {e.high:+.1f}] "
            f"| {sum(a[q]['prediction'] == b[q]['prediction'] for q in shared)} "
            f"| {calls:.2f} ({made:.2f}) | {statistics.mean(float(u.get('output_tokens') or 0) for u in usage):.0f} "
            f"| {statistics.mean(float(r.get('seconds') or 0) for r in rows):.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="LABEL=FILE[:METHOD]; the first is compared with each other")
    parser.add_argument("--table", action="store_true", help="one Markdown row for each B: A - B paired, and B's cost")
    parser.add_argument("--rows", type=row_range, help="START:END: the questions at those places of A's file (1-based)")
    args = parser.parse_args()
    (a_label, a), *others = [records_of(spec) for spec in args.runs]
    if args.rows:
        start, end = args.rows
        a = dict(list(a.items())[start - 1 : end])
    if args.table:
        print(table(a_label, a, others))
        return
    for b_label, b in others:
        shared = sorted(set(a) & set(b))
        if not shared:
            print(f"{a_label} and {b_label} share no question")
            continue
        print(f"{a_label} vs {b_label}: {len(shared)} questions")
        for label, recs in ((a_label, a), (b_label, b)):
            rows = [recs[q] for q in shared]
            scores = {m: 100 * statistics.mean(r["metrics"][m] for r in rows) for m in ("cover_em", "em", "f1")}
            print(
                f"  {label:<16} cover-EM {scores['cover_em']:5.1f}  EM {scores['em']:5.1f}  F1 {scores['f1']:5.1f}  "
                + cost(rows)
            )
        for metric in ("cover_em", "em"):
            d = paired_difference(
                [a[q]["metrics"][metric] >= 1 for q in shared], [b[q]["metrics"][metric] >= 1 for q in shared]
            )
            print(
                f"  {metric}: {a_label} - {b_label} {d.difference:+.1f} [{d.low:+.1f}, {d.high:+.1f}], "
                f"{d.a_only} / {d.b_only}, McNemar p = {d.p_value:.3f}"
            )
        f1 = statistics.mean(a[q]["metrics"]["f1"] - b[q]["metrics"]["f1"] for q in shared)
        same = sum(a[q]["prediction"] == b[q]["prediction"] for q in shared)
        print(f"  f1: {a_label} - {b_label} {100 * f1:+.1f}; the same prediction on {same} of {len(shared)}")


if __name__ == "__main__":
    main()
