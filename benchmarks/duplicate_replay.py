"""Replay the duplicate guard over the duplicates that evaluation records hold.

A SearChain tree records each node ``DuplicateQuery`` skipped, with the earlier query it matched
(``duplicate_of``). After a change to :func:`~searchain_graph.method.adaptations.query_kinds.comparable`, this
lists the recorded decisions the guard now rejects: the (question, method) pairs whose run would
go otherwise, and so must run again. Nothing is called but the guard (no encoder, no LLM)::

    python benchmarks/duplicate_replay.py docs/results/qwen/hotpotqa.jsonl docs/results/qwen/musique.jsonl

It prints, per file, the duplicate decisions read and those rejected, then each rejected one
(``--all``: of every record, also those a rerun superseded).
A rejected decision was made by the cosine and an older guard; an accepted one may still be wrong
(the guard only keeps pairs apart).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any


def recorded_duplicates(tree: Any) -> Iterator[tuple[str, str]]:
    """Each ``(query, matched query)`` that a record's tree says was skipped as a duplicate."""
    if isinstance(tree, dict):
        matched = tree.get("duplicate_of")
        if isinstance(matched, dict) and isinstance(tree.get("query"), str) and isinstance(matched.get("query"), str):
            yield tree["query"], matched["query"]
        for value in tree.values():
            yield from recorded_duplicates(value)
    elif isinstance(tree, list):
        for value in tree:
            yield from recorded_duplicates(value)


def rejected(
    records: Iterable[dict[str, Any]], guard: Callable[[str, str], bool]
) -> tuple[int, list[tuple[str, str, str, str]]]:
    """The duplicate decisions ``records`` hold, and ``(qid, method, query, matched)`` of each ``guard`` rejects."""
    read, changed = 0, []
    for record in records:
        for query, matched in recorded_duplicates(record.get("tree")):
            read += 1
            if not guard(query, matched):
                changed.append((str(record.get("qid")), str(record.get("method")), query, matched))
    return read, changed


def main(argv: list[str] | None = None) -> int:
    """Print, per results file, the decisions read and the ones the guard now rejects."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results", nargs="+", type=Path, help="results JSONL files of `searchain eval`")
    parser.add_argument("--all", action="store_true", help="also the records a rerun superseded")
    args = parser.parse_args(argv)

    from searchain_graph.evaluation.harness import read_records
    from searchain_graph.evaluation.report import latest_records
    from searchain_graph.method.adaptations.query_kinds import comparable

    for path in args.results:
        records = read_records(path)
        read, changed = rejected(records if args.all else latest_records(records), comparable)
        pairs = sorted({(qid, method) for qid, method, _, _ in changed})
        print(f"{path}: {read} duplicate decisions, {len(changed)} now rejected, in {len(pairs)} record(s)")
        for qid, method, query, matched in changed:
            print(f"  {qid} {method}: {json.dumps(query)} was taken for {json.dumps(matched)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
