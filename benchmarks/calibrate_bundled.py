"""Calibrate the bundled reader's θ for both kinds of *f*, and write the oracle-chain tables.

For each *f* (``joint``, the default, and ``relevance``, the paper's), θ is chosen by the
calibration rule (:func:`searchain_graph.evaluation.calibration.choose_threshold`) on the gold
chains of 2WikiMultihopQA's train-split dev questions, which no result reports. The choices are
written beside the weights (``calibration.json``, ``calibration-relevance.json``), in the format
``searchain calibrate`` saves; the tables go to one Markdown file. The dev chains are also swept
with the checks of *g* off: the θ the rule would choose without them.

The same rule is then applied to the gold chains of the ``../shared`` samples of MuSiQue and
2WikiMultihopQA that the results report, pooled and each alone, and each is read at the dev θ:
how the choice holds on chains it was not made on.

    python benchmarks/calibrate_bundled.py --out docs/results/oracle_chain_bundled_tables.md
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from searchain_graph.evaluation.calibration import Calibration, calibrate, choose_threshold, dataset_retriever
from searchain_graph.evaluation.dataset_loading import load_dataset
from searchain_graph.evaluation.oracle import sweep
from searchain_graph.ir.readers.bundled import BUNDLED_READER_DIR, BundledReader, _calibration_file
from searchain_graph.ir.readers.calibration import save_threshold
from searchain_graph.method.graph import reader_settings

DATA = Path("../shared/data")
SETS = {
    "musique": DATA / "musique/musique_ans_dev.sample100.jsonl",
    "2wikimultihopqa": DATA / "2wikimultihopqa/dev.sample100.jsonl",
}
TITLES = {"musique": "MuSiQue alone", "2wikimultihopqa": "2WikiMultihopQA alone"}
DEV = ("2wikimultihopqa", DATA / "2wikimultihopqa/train.sample200.jsonl")
"""Dev questions with gold chains that no result reports (2Wiki's train split)."""


def _row(name: str, theta: float, row: dict[str, Any]) -> str:
    """One summary line: a sweep's ``row`` at ``theta``."""
    return (
        f"| {name} | {theta:g} | {100 * row['wrong_repaired']:.1f}% | {100 * row['correct_broken']:.1f}% "
        f"| {100 * row['unsolved_completed']:.1f}% | {row['n_wrong']} / {row['n_correct']} / {row['n_unsolved']} |"
    )


def _line(name: str, cal: Calibration) -> str:
    return _row(name, cal.threshold, cal.rows[cal.chosen])


def _at_dev(name: str, cal: Calibration, theta: float, reader: BundledReader) -> str:
    """A sample's own nodes at the dev θ (the one that ships), as a summary line."""
    row = sweep(cal.nodes, [theta], settings=reader_settings(reader, confidence_threshold=theta)[0])[0]
    return _row(f"{name}, at the dev θ", theta, row)


def _without_checks(name: str, cal: Calibration, reader: BundledReader) -> str:
    """The rule on ``cal``'s nodes with the checks of *g* off (``answer_checks=False``), as a summary line."""
    settings = replace(reader_settings(reader)[0], answer_checks=False)
    rows = sweep(cal.nodes, [float(row["theta"]) for row in cal.rows], settings=settings)
    choice = choose_threshold(rows)
    return _row(f"{name}, without the checks of g", choice.threshold, rows[choice.row])


def main() -> None:
    """Calibrate on the dev chains, save θ beside the weights, write the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, default=BUNDLED_READER_DIR)
    parser.add_argument("--out", type=Path, required=True, help="the Markdown tables")
    parser.add_argument("--no-save", action="store_true", help="do not write the calibration files")
    args = parser.parse_args()
    examples = {name: load_dataset(name, str(path)) for name, path in SETS.items()}
    retrievers = {name: dataset_retriever(ex) for name, ex in examples.items()}
    dev_examples = load_dataset(DEV[0], str(DEV[1]))
    dev_retriever = dataset_retriever(dev_examples)
    sections: list[str] = []
    summary: list[str] = []
    for confidence in ("joint", "relevance"):
        reader = BundledReader(args.model, confidence=confidence).load()
        dev_name = f"{confidence}, 2WikiMultihopQA train-split dev"
        dev = calibrate(
            dev_examples,
            dev_retriever,
            reader,
            source={"dataset": DEV[0], "data": str(DEV[1]), "reader_spec": "bundled"},
        )
        summary += [_line(f"{dev_name} (ships)", dev), _without_checks(dev_name, dev, reader)]
        results: dict[str, Calibration] = {}
        for name in SETS:
            results[name] = calibrate(
                examples[name], retrievers[name], reader, source={"dataset": name, "data": str(SETS[name])}
            )
        first, second = list(SETS)
        pooled = calibrate(
            examples[first],
            retrievers[first],
            reader,
            also=[(examples[second], retrievers[second])],
            source={"dataset": f"{first}+{second}", "data": [str(p) for p in SETS.values()]},
        )
        summary += [_line(f"{confidence}, reported samples pooled", pooled)]
        summary += [_line(f"{confidence}, {TITLES[n]}", results[n]) for n in SETS]
        summary += [_at_dev(f"{confidence}, reported samples pooled", pooled, dev.threshold, reader)]
        summary += [_at_dev(f"{confidence}, {TITLES[n]}", results[n], dev.threshold, reader) for n in SETS]
        sections.append(f"# The {confidence} *f*\n\n## 2WikiMultihopQA train-split dev: θ = {dev.threshold:g} ships\n")
        sections.append(dev.render(reader_name=f"bundled ({confidence})"))
        sections.append("\n## The reported samples: MuSiQue + 2WikiMultihopQA pooled\n")
        sections.append(pooled.render(reader_name=f"bundled ({confidence})"))
        for name in SETS:
            sections.append(f"\n## {TITLES[name]}\n")
            sections.append(results[name].render(reader_name=f"bundled ({confidence})"))
        if not args.no_save:
            with tempfile.TemporaryDirectory() as tmp:
                saved = save_threshold(reader, dev.threshold, details=dev.record(), directory=tmp)
                target = _calibration_file(args.model, confidence)
                shutil.copyfile(saved, target)
            print(f"saved θ = {dev.threshold:g} for the {confidence} f to {target}")
    head = (
        "| *f*, chains | θ | wrong repaired | correct broken | unsolved completed "
        "| nodes wrong / correct / unsolved |\n"
        "|---|---|---|---|---|---|\n"
    )
    args.out.write_text(head + "\n".join(summary) + "\n\n" + "\n".join(sections) + "\n", encoding="utf-8")
    print(head + "\n".join(summary))
    info: dict[str, Any] = json.loads((args.model / "training.json").read_text(encoding="utf-8"))
    print(f"weights: step {info.get('step')}")


if __name__ == "__main__":
    main()
