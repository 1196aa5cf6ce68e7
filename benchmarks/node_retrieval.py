"""What the top-1 passage of SearChain's node queries is, by what the retriever is given.

Reads SearChain's records (their trees hold every node query the LLM wrote) and retrieves each
query again with BM25 over the same corpus as the evaluation (all the file's paragraphs), in
several ways, no LLM involved:

* ``query``: the node's query alone (the paper: IR retrieves the top-1 document for q_i);
* ``query+question``: the node's query followed by the question it serves;
* ``question``: the question alone (what direct retrieval searches with), for reference;
* ``query, top-3``: the query alone, any of its top 3 passages (what reading three and keeping the
  surest *g* could reach at best; the paper reads one).

For each, it counts the node queries whose passages include one of the question's gold supporting
paragraphs, and the questions where some node's passages include a supporting paragraph that holds
the gold answer (the evaluation report's "never read" is the complement of this, for the paper's
way). A question run more than once in one file counts once (its last record).

    python benchmarks/node_retrieval.py --data ../shared/data/hotpotqa/ircot_dev_subsampled.first200.jsonl \
        --records docs/results/qwen/dev/turns.jsonl --records docs/results/qwen/dev/instruction.jsonl

Choose by the development questions' records; the evaluation's own records may be read after,
for the figures, but choosing by them would tune on the test set.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchain_graph.evaluation.dataset_loading import corpus_paragraphs, detect_dataset, load_dataset
from searchain_graph.ir.bm25.retriever import BM25Retriever
from searchain_graph.method.parsing import answer_contains

WAYS: dict[str, tuple[Callable[[str, str], str], int]] = {
    "query, top-1": (lambda query, question: query, 1),
    "query+question, top-1": (lambda query, question: f"{query} {question}", 1),
    "question, top-1": (lambda query, question: question, 1),
    "query, top-3 (a ceiling: any of 3)": (lambda query, question: query, 3),
}


def node_queries(record: dict[str, Any]) -> list[str]:
    """Every distinct query of every round of a SearChain record's tree, in order."""
    branches = (record.get("tree") or {}).get("tree") or []
    return list(dict.fromkeys(n["query"] for b in branches for n in b.get("nodes") or [] if n.get("query")))


def reader_gate(records: list[dict[str, Any]], retriever: BM25Retriever, theta: float, ks: tuple[int, ...]) -> None:
    """Per way of reading the query's top-k passages, the questions where some node's *g* is a gold answer above θ.

    Top-1 is the paper's; top-k keeps, per query, the passage whose *g* the reader is surest of.
    """
    from searchain_graph.ir.readers.base import Passage
    from searchain_graph.ir.readers.load import load_reader

    reader: Any = load_reader("bundled", None)  # type: ignore[arg-type]
    queries = {(r["qid"], q) for r in records for q in node_queries(r)}
    docs = {key: retriever.invoke(key[1], k=max(ks)) for key in sorted(queries)}
    pairs = [
        (key, i, Passage(d.page_content, str(d.metadata.get("title") or "")))
        for key, ds in docs.items()
        for i, d in enumerate(ds)
    ]
    outputs = reader.read_batch([(key[1], passage) for key, _, passage in pairs])
    read: dict[tuple[str, str], list[Any]] = {}
    for (key, _, _), out in zip(pairs, outputs, strict=True):
        read.setdefault(key, []).append(out)
    print(f"\nThe bundled reader at θ = {theta}: questions where some node's g holds a gold answer with f > θ")
    print("| read | questions |")
    print("|---|---:|")
    for k in ks:
        gained = 0
        for record in records:
            golds = record["answers"]
            for query in node_queries(record):
                surest = max(read[record["qid"], query][:k], key=lambda o: o.confidence)
                if surest.confidence > theta and any(answer_contains(surest.answer, g) for g in golds):
                    gained += 1
                    break
        print(f"| top-{k}, surest g | {gained} of {len(records)} ({100 * gained / len(records):.1f}%) |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the dataset file the records were run on")
    parser.add_argument("--records", action="append", required=True, help="SearChain records (JSONL); repeatable")
    parser.add_argument("--theta", type=float, help="also read each query's passages with the bundled reader at this θ")
    args = parser.parse_args()

    examples = {e["qid"]: e for e in load_dataset(detect_dataset(args.data), args.data)}
    retriever = BM25Retriever.from_documents(corpus_paragraphs(examples.values()), k=3)
    latest: dict[tuple[str, str], dict[str, Any]] = {}
    for path in args.records:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("method") == "searchain" and record.get("tree") and record.get("qid") in examples:
                latest[path, record["qid"]] = record
    records = list(latest.values())
    print(f"{len(records)} SearChain record(s), {len({r['qid'] for r in records})} question(s)")
    print("| retrieved with | node queries | a supporting paragraph found | questions | answer's paragraph read |")
    print("|---|---:|---:|---:|---:|")
    for way, (text_of, k) in WAYS.items():
        nodes = hits = answered = 0
        for record in records:
            example = examples[record["qid"]]
            support = [p for p in example["paragraphs"] if p["is_supporting"]]
            titles = {p["title"] for p in support}
            holding = {p["title"] for p in support if any(answer_contains(p["text"], a) for a in example["answers"])}
            read = set()
            for query in node_queries(record):
                docs = retriever.invoke(text_of(query, record["question"]), k=k)
                found = {d.metadata.get("title") for d in docs}
                nodes += 1
                hits += bool(found & titles)
                read |= found
            answered += bool(read & holding)
        share = f"{hits} ({100 * hits / max(nodes, 1):.1f}%)"
        print(f"| {way} | {nodes} | {share} | {len(records)} | {answered} ({100 * answered / len(records):.1f}%) |")
    if args.theta is not None:
        reader_gate(records, retriever, args.theta, (1, 2, 3))


if __name__ == "__main__":
    main()
