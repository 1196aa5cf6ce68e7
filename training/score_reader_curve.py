"""Score the learning curve that ``train_reader_gpu.py`` wrote: SQuAD v1.1 dev EM/F1 at each step.

``dev_predictions.json`` holds, for each evaluated step, the answer the reader extracted from
each dev question's gold paragraph; this scores them against every annotator's answer with the
official SQuAD v1.1 definitions (:mod:`searchain_graph.evaluation.metrics`), with a 95% interval
(normal approximation over questions), and prints one JSON row a step.

    python training/score_reader_curve.py runs/reader-gpu/dev_predictions.json --out curve.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import sys
from pathlib import Path


def _interval(values: list[float]) -> tuple[float, float]:
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, n - 1))
    half = 1.96 * sd / math.sqrt(n)
    return round(100 * (mean - half), 1), round(100 * (mean + half), 1)


def main(argv: list[str] | None = None) -> int:
    """Print (and optionally save) EM/F1 for each step in the predictions file."""
    from searchain_graph.evaluation.metrics import exact_match, f1

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("predictions", type=Path)
    p.add_argument("--squad-dev", type=Path, default=Path("../shared/data/squad/dev-v1.1.rebuilt.json.gz"))
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    with gzip.open(args.squad_dev, "rt", encoding="utf-8") as fh:
        gold = {
            qa["id"]: [a["text"] for a in qa["answers"]]
            for article in json.load(fh)["data"]
            for para in article["paragraphs"]
            for qa in para["qas"]
        }
    runs = json.loads(args.predictions.read_text(encoding="utf-8"))
    rows = []
    for key, answers in runs.items():
        missing = [qid for qid in answers if qid not in gold]
        if missing:
            where = f"{len(missing)} predicted ids are not in {args.squad_dev}"
            print(f"error: {where}, e.g. {missing[0]}", file=sys.stderr)
            return 2
        ems = [exact_match(a["answer"], gold[qid]) for qid, a in answers.items()]
        f1s = [f1(a["answer"], gold[qid], yes_no_rule=False) for qid, a in answers.items()]
        rows.append(
            {
                "step": key,
                "questions": len(ems),
                "em": round(100 * sum(ems) / len(ems), 1),
                "em_95": _interval(ems),
                "f1": round(100 * sum(f1s) / len(f1s), 1),
                "f1_95": _interval(f1s),
            }
        )
        print(json.dumps(rows[-1]))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
