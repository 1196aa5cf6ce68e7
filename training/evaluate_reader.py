"""Measure a trained reader: SQuAD dev EM/F1, how well *f* tells answering passages apart, speed.

For a ``DPRReader`` directory (``training/train_reader.py --export``; the bundled reader by
default), on data it was not trained on:

* **span accuracy**: EM/F1 (the official SQuAD v1.1 definitions, :mod:`searchain_graph.evaluation.metrics`)
  on ``--questions`` SQuAD v1.1 dev questions (0: all 10,570), reading the gold paragraph
  (``--span-only``: this alone);
* **relevance** (*f*, what SearChain's verification trusts): AUROC of *f* between the gold
  paragraph and BM25's best paragraph without the answer (over all dev paragraphs), the same
  kind of negative the reader was trained with; and between SQuAD v2.0 dev's answerable and
  unanswerable questions, each on its own paragraph (unanswerable there means the paragraph looks
  right but does not say);
* **throughput**: pairs/s one ``read`` at a time and in one ``read_batch``.

    python training/evaluate_reader.py --questions 1000 --out runs/reader-eval.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from pathlib import Path
from typing import Any

SQUAD = Path("../shared/data/squad")


def _articles(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return list(json.load(fh)["data"])


def auroc(positives: list[float], negatives: list[float]) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    if not positives or not negatives:
        return float("nan")
    ranked = sorted([(s, 1) for s in positives] + [(s, 0) for s in negatives])
    rank_sum, i = 0.0, 0
    while i < len(ranked):
        j = i
        while j < len(ranked) and ranked[j][0] == ranked[i][0]:
            j += 1
        mid = (i + j + 1) / 2  # 1-based average rank of the tie group
        rank_sum += mid * sum(1 for k in range(i, j) if ranked[k][1])
        i = j
    n_pos, n_neg = len(positives), len(negatives)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def main(argv: list[str] | None = None) -> int:
    """Measure the reader and print (and optionally save) the figures as JSON."""
    from searchain_graph.evaluation.metrics import exact_match, f1
    from searchain_graph.ir.bm25.index import BM25Index
    from searchain_graph.ir.readers.base import Passage
    from searchain_graph.ir.readers.bundled import BUNDLED_READER_DIR, BundledReader

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, default=BUNDLED_READER_DIR)
    p.add_argument("--squad", type=Path, default=SQUAD)
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--speed-pairs", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--span-only", action="store_true", help="only EM/F1 (with --questions 0: all of dev)")
    p.add_argument("--max-length", type=int, help="window length in tokens (default: the reader's)")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)

    window = {"max_length": args.max_length} if args.max_length else {}
    reader = BundledReader(args.model, **window).load()
    rng = random.Random(args.seed)
    dev = _articles(args.squad / "dev-v1.1.rebuilt.json.gz")
    paragraphs = [(a["title"].replace("_", " "), para["context"]) for a in dev for para in a["paragraphs"]]
    items = []
    for a in dev:
        for para in a["paragraphs"]:
            for qa in para["qas"]:
                gold = [x["text"] for x in qa["answers"]]
                items.append((qa["question"], a["title"].replace("_", " "), para["context"], gold))
    rng.shuffle(items)
    items = items[: args.questions or None]

    def passage(title: str, text: str) -> Passage:
        return Passage(text, title)

    start = time.perf_counter()
    outs = reader.read_batch([(q, passage(t, c)) for q, t, c, _ in items])
    read_seconds = time.perf_counter() - start
    golds = [gold for *_, gold in items]
    em = 100 * sum(max(exact_match(o.answer, g) for g in gold) for o, gold in zip(outs, golds, strict=True))
    em /= len(items)
    f1s = 100 * sum(max(f1(o.answer, g, yes_no_rule=False) for g in gold) for o, gold in zip(outs, golds, strict=True))
    f1s /= len(items)

    if args.span_only:
        result = {"model": str(args.model), "questions": len(items), "squad_dev_em": round(em, 1)}
        result |= {"squad_dev_f1": round(f1s, 1), "window": reader.max_length}
        result["read_seconds_dev"] = round(read_seconds, 1)
        print(json.dumps(result, indent=1))
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
        return 0
    index = BM25Index.build((f"{t}\n{c}" for t, c in paragraphs), workers=1)
    negatives_pairs = []
    for q, _title, c, gold in items:
        ids, _ = index.search(q, k=8)
        for i in ids:
            nt, nc = paragraphs[int(i)]
            if nc != c and not any(g.lower() in nc.lower() for g in gold):
                negatives_pairs.append((q, passage(nt, nc)))
                break
    neg = reader.read_batch(negatives_pairs)
    rel_bm25 = auroc([o.confidence for o in outs], [o.confidence for o in neg])

    v2 = _articles(args.squad / "dev-v2.0.rebuilt.json.gz")
    v2_items = [
        (qa["question"], a["title"].replace("_", " "), para["context"], bool(qa.get("is_impossible")))
        for a in v2
        for para in a["paragraphs"]
        for qa in para["qas"]
    ]
    rng.shuffle(v2_items)
    v2_items = v2_items[: args.questions]
    v2_out = reader.read_batch([(q, passage(t, c)) for q, t, c, _ in v2_items])
    rel_v2 = auroc(
        [o.confidence for o, it in zip(v2_out, v2_items, strict=True) if not it[3]],
        [o.confidence for o, it in zip(v2_out, v2_items, strict=True) if it[3]],
    )

    speed = [(q, passage(t, c)) for q, t, c, _ in items[: args.speed_pairs]]
    t0 = time.perf_counter()
    for pair in speed:
        reader.read(*pair)
    one = len(speed) / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    reader.read_batch(speed)
    batched = len(speed) / (time.perf_counter() - t0)

    thresholds = sorted({round(x / 2, 1) for x in range(-8, 13)})
    gate = {
        f"{th:g}": {
            "gold_above": round(sum(o.confidence > th for o in outs) / len(outs), 3),
            "bm25_negative_above": round(sum(o.confidence > th for o in neg) / max(1, len(neg)), 3),
        }
        for th in thresholds
    }
    result = {
        "model": str(args.model),
        "questions": len(items),
        "squad_dev_em": round(em, 1),
        "squad_dev_f1": round(f1s, 1),
        "relevance_auroc_gold_vs_bm25_negative": round(rel_bm25, 3),
        "bm25_negatives": len(negatives_pairs),
        "relevance_auroc_squad2_answerable_vs_not": round(rel_v2, 3),
        "pairs_per_s_one_at_a_time": round(one, 1),
        "pairs_per_s_batched": round(batched, 1),
        "read_seconds_dev": round(read_seconds, 1),
        "share_above_threshold": gate,
    }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
