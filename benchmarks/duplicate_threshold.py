"""Calibrate :class:`~searchain_graph.method.adaptations.same_meaning.SemanticDuplicate`'s threshold on dev data.

``DuplicateQuery`` must say "same query" for a paraphrase (else a small model's rewording is
corrected again, round after round) and "new query" for another step of the same question (else a
node that needed checking is skipped). Dev data for both, from a dataset's gold decompositions
(MuSiQue by default; the ``../shared`` sample, never the evaluation questions' own runs):

* **duplicates**: each sub-question (``#k`` resolved with the gold answers) and a paraphrase the
  LLM writes of it (the offline default, Qwen2.5-Coder-1.5B, greedy);
* **distinct, hard**: two different sub-questions of the same question (they share its entities);
* **distinct, easy**: sub-questions of two different questions;
* **distinct, other question word**: a sub-question and itself with its question word swapped
  ("Where was X born?" / "When was X born?"), which a bi-encoder scores near 1.

Each share is given for the cosine alone and with the answer-kind guard of
:func:`~searchain_graph.method.adaptations.query_kinds.comparable` (the default rule).

For each threshold it prints the share of duplicates recognised and of distinct pairs taken for
duplicates, and chooses the lowest threshold that takes at most ``--max-false`` (1%) of the hard
distinct pairs for duplicates: a false duplicate skips a check, the costlier mistake. Paraphrases
are cached in ``--cache`` (JSONL), so a rerun costs no LLM call::

    python benchmarks/duplicate_threshold.py --data ../shared/data/musique/musique_ans_dev.sample100.jsonl \\
        --pairs 80 --out docs/results/duplicate_threshold.md
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

PROMPT = (
    "Rewrite the question below in other words, keeping exactly its meaning. "
    "Answer with the rewritten question only.\nQuestion: {question}\nRewritten question:"
)


def main(argv: list[str] | None = None) -> int:
    """Build the pairs, score them, print (and write) the table and the chosen threshold."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="musique")
    parser.add_argument("--data", required=True)
    parser.add_argument("--pairs", type=int, default=80, help="sub-questions paraphrased (duplicate pairs)")
    parser.add_argument("--model", default=None, help="chat model for the paraphrases (default: as `searchain ask`)")
    parser.add_argument("--cache", type=Path, default=Path("runs/paraphrases.jsonl"))
    parser.add_argument("--max-false", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)

    from searchain_graph.evaluation.dataset_loading import load_dataset
    from searchain_graph.evaluation.oracle import build_oracle_nodes
    from searchain_graph.method.adaptations.query_kinds import comparable
    from searchain_graph.method.adaptations.same_meaning import SemanticDuplicate

    nodes = build_oracle_nodes(load_dataset(args.dataset, args.data), wrong_fraction=0.0, unsolved_fraction=0.0)
    by_question: dict[str, list[str]] = {}
    for node in nodes:
        by_question.setdefault(node["qid"], []).append(node["query"])
    rng = random.Random(args.seed)
    queries = [q for qs in by_question.values() for q in qs]
    chosen = rng.sample(queries, min(args.pairs, len(queries)))

    cache: dict[str, str] = {}
    if args.cache.is_file():
        cache = {r["query"]: r["paraphrase"] for r in map(json.loads, args.cache.read_text().splitlines())}
    todo = [q for q in chosen if q not in cache]
    if todo:
        from searchain_graph.llms.loading import load_chat_model

        llm = load_chat_model(args.model, max_new_tokens=48)
        args.cache.parent.mkdir(parents=True, exist_ok=True)
        with args.cache.open("a", encoding="utf-8") as fh:
            for i, query in enumerate(todo, start=1):
                text = str(llm.invoke(PROMPT.format(question=query)).content).strip().splitlines()
                paraphrase = (text[0] if text else "").strip().strip('"')
                cache[query] = paraphrase
                fh.write(json.dumps({"query": query, "paraphrase": paraphrase}) + "\n")
                fh.flush()
                print(f"[{i}/{len(todo)}] {query!r} -> {paraphrase!r}", file=sys.stderr)

    duplicates = [(q, cache[q]) for q in chosen if cache.get(q) and cache[q].lower() != q.lower()]
    hard = [(a, b) for qs in by_question.values() for i, a in enumerate(qs) for b in qs[i + 1 :] if a != b]
    easy = [(rng.choice(queries), rng.choice(queries)) for _ in range(len(hard))]
    easy = [(a, b) for a, b in easy if a != b]
    swaps = {"where": "When", "when": "Where", "who": "When"}
    other = []
    for q in queries:
        word = q.split(" ", 1)[0].lower()
        if word in swaps and " " in q:
            other.append((q, swaps[word] + " " + q.split(" ", 1)[1]))
    rule = SemanticDuplicate()
    sets = (("duplicates", duplicates), ("hard", hard), ("easy", easy), ("other", other))
    score = {name: [rule.similarities(a, [b])[0] for a, b in pairs] for name, pairs in sets}
    kind = {name: [comparable(a, b) for a, b in pairs] for name, pairs in sets}

    def share(name: str, theta: float, guarded: bool = False) -> float:
        values = [v >= theta and (k or not guarded) for v, k in zip(score[name], kind[name], strict=True)]
        return sum(values) / len(values) if values else 0.0

    def both(name: str, theta: float) -> str:
        return f"{100 * share(name, theta):.1f}% / {100 * share(name, theta, True):.1f}%"

    grid = [round(0.50 + 0.025 * i, 3) for i in range(19)]
    choice = next((t for t in grid if share("hard", t) <= args.max_false), grid[-1])
    lines = [
        f"Encoder: {rule.model_name}. Dev pairs from {args.data}: {len(duplicates)} paraphrases (the LLM's, "
        f"greedy), {len(hard)} pairs of different steps of one question, {len(easy)} random pairs, "
        f"{len(other)} sub-questions against themselves with another question word (where/when/who swapped).",
        "",
        "Each cell: cosine alone / cosine with the same kind of answer, numbers and names "
        "(`comparable`, the default rule).",
        "",
        "| threshold | paraphrases recognised | different steps as duplicates | random pairs as duplicates "
        "| other question word as duplicates |",
        "|---:|---:|---:|---:|---:|",
    ]
    for t in grid:
        mark = f"**{t:.3f}** (chosen)" if t == choice else f"{t:.3f}"
        cells = " | ".join(both(name, t) for name in ("duplicates", "hard", "easy", "other"))
        lines.append(f"| {mark} | {cells} |")
    lines += ["", f"Chosen: the lowest threshold with at most {100 * args.max_false:.0f}% of different steps "
              f"taken for duplicates: {choice:.3f}."]  # fmt: skip
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
