"""Do two versions of the package answer the same? Every method on the integration run, compared.

Runs the methods of ``searchain eval`` (all 17 by default) on the first ``--questions`` HotpotQA
questions with the integration tests' default stack (SmolLM2-135M through the GGUF backend,
greedy, 160 new tokens; BM25 top-3 over the example corpus; the bundled reader) and writes the
harness's records. With ``--compare OLD.jsonl`` it then lists every (question, method) whose
prediction, final content, rounds, usage or Tree-of-Reasoning differs from ``OLD``'s, and exits
non-zero when any does. A restructure that must not change behaviour runs it on the commit
before and after::

    git worktree add /tmp/before HEAD~1
    PYTHONPATH=/tmp/before/src python benchmarks/same_predictions.py --out runs/before.jsonl
    python benchmarks/same_predictions.py --out runs/after.jsonl --compare runs/before.jsonl

A version whose defaults changed gives the other's explicitly (``--options '{"preset": "tuned",
"demonstrations": "instruction", "duplicates": "text"}'``: the defaults before the presets).

Greedy decoding on one machine is deterministic, so the two runs are comparable exactly; on two
machines the LLM's arithmetic may differ, so run both on one.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SEARCHAIN_SHARED_DATA", ROOT.parent / "shared" / "data"))
COMPARED = ("prediction", "final_content", "rounds", "steps", "usage", "sources", "cited", "tree", "warnings")


def run(out: Path, questions: int, methods: list[str], options: dict[str, Any] | None = None) -> None:
    """The integration run: ``methods`` on ``questions`` HotpotQA questions, records to ``out``.

    ``options`` are the methods' options as ``searchain eval`` gives them (SearChain's ``Context``
    fields): a version whose defaults changed is run with the other version's settings given.
    """
    from searchain_graph import BM25Retriever, TransformersChatModel
    from searchain_graph.evaluation.dataset_loading import load_dataset
    from searchain_graph.evaluation.harness import run_evaluation
    from searchain_graph.ir.readers.load import load_reader

    shared = SHARED / "hotpotqa" / "ircot_dev_subsampled.first200.jsonl"
    path = shared if shared.is_file() else ROOT / "examples/data/hotpotqa_dev20_questions.jsonl"
    examples = load_dataset("hotpotqa", path, limit=questions)
    llm = TransformersChatModel.from_smollm2(max_new_tokens=160).load()
    retriever = BM25Retriever.from_files(ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl", k=3)
    run_evaluation(
        examples,
        methods,
        llm=llm,
        retriever=retriever,
        reader=load_reader("bundled", llm),
        out_path=out,
        options=options,
    )


def _strip_seconds(value: Any) -> Any:
    """``value`` without wall times (``seconds``), which no two runs share."""
    if isinstance(value, dict):
        return {k: _strip_seconds(v) for k, v in value.items() if k != "seconds"}
    if isinstance(value, list):
        return [_strip_seconds(v) for v in value]
    return value


def compare(new: Path, old: Path) -> list[str]:
    """One line per (question, method, field) that differs between the two record files."""
    from searchain_graph.evaluation.harness import read_records

    def keyed(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
        return {(r["qid"], r["method"]): r for r in read_records(path)}

    before, after = keyed(old), keyed(new)
    lines = [f"{q} {m}: missing from {new}" for q, m in sorted(set(before) - set(after))]
    lines += [f"{q} {m}: not in {old}" for q, m in sorted(set(after) - set(before))]
    for key in sorted(set(before) & set(after)):
        for field in COMPARED:
            was, now = _strip_seconds(before[key].get(field)), _strip_seconds(after[key].get(field))
            if field == "usage" and isinstance(was, dict) and isinstance(now, dict):
                # a counter one version does not keep (llm_cache_hits, say) counts as 0 there
                was, now = {k: was.get(k, 0) for k in {*was, *now}}, {k: now.get(k, 0) for k in {*was, *now}}
            if was != now:
                lines.append(
                    f"{key[0]} {key[1]} {field}:\n  before {json.dumps(was)[:400]}\n  after  {json.dumps(now)[:400]}"
                )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run, then compare when asked; exit 1 when anything differs."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, help="records file (a rerun resumes it)")
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--methods", default="all", help="comma-separated method names, or all")
    parser.add_argument("--compare", type=Path, default=None, help="records of the other version")
    parser.add_argument(
        "--options",
        type=json.loads,
        default=None,
        metavar="JSON",
        help='the methods\' options, e.g. \'{"demonstrations": "instruction", "duplicates": "text"}\'',
    )
    parser.add_argument("--no-run", action="store_true", help="only compare the files as they are")
    args = parser.parse_args(argv)
    from searchain_graph.evaluation.methods import parse_methods

    if not args.no_run:
        run(args.out, args.questions, parse_methods(args.methods), args.options)
    if args.compare is None:
        return 0
    lines = compare(args.out, args.compare)
    print("\n".join(lines) if lines else f"same: every record of {args.out} matches {args.compare}")
    return 1 if lines else 0


if __name__ == "__main__":
    sys.exit(main())
