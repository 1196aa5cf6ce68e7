"""Evaluation throughput of the local LLM: one call at a time against continuous batching.

Runs the evaluation harness twice over the same questions and methods, with SmolLM2 (the
embedded default stack: BM25 over the dataset's paragraphs, ``LLMReader``):

* ``sequential``: ``max_batch_size=1``, no response cache, one (question, method) pair at a
  time: how ``searchain eval`` ran before ``--batch-size``;
* ``batched``: ``max_batch_size=B``, the response cache on, ``B`` pairs at once: what
  ``searchain eval --batch-size B`` does.

It prints pairs per minute for each, the speed-up, the share of pairs whose final content is
identical in both runs (greedy decoding, so any difference comes from batched arithmetic), and
the batch engine's counters: mean rows per decoding step and the share of prompt tokens taken
from its prefix cache.

    OMP_NUM_THREADS=1 python benchmarks/batching.py --questions 4 --batch-size 8
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from searchain_graph.evaluation.datasets import corpus_paragraphs, load_dataset
from searchain_graph.evaluation.harness import parse_methods, run_evaluation
from searchain_graph.ir.bm25_retriever import BM25Retriever
from searchain_graph.ir.readers.llm import LLMReader
from searchain_graph.llms.batching import BatchEngine
from searchain_graph.llms.chat_model import TransformersChatModel

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared/data/hotpotqa/ircot_dev_subsampled.first200.jsonl"


def run(examples: list[Any], methods: list[str], retriever: BM25Retriever, batch: int, out: Path) -> dict[str, Any]:
    """One harness run; returns its wall time, records and the LLM (for engine counters)."""
    llm = TransformersChatModel.from_smollm2(max_batch_size=batch, response_cache=4096 if batch > 1 else 0).load()
    start = time.perf_counter()
    summary = run_evaluation(
        examples,
        methods,
        llm=llm,
        retriever=retriever,
        reader=LLMReader(llm),
        out_path=out,
        concurrency=batch,
    )
    return {"seconds": time.perf_counter() - start, "records": summary.records, "llm": llm, "errors": summary.errors}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="hotpotqa")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--methods", default="all")
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()

    dataset = load_dataset(args.dataset, args.data)
    retriever = BM25Retriever.from_documents(corpus_paragraphs(dataset), k=1)
    examples = dataset[: args.questions]
    methods = parse_methods(args.methods)
    with tempfile.TemporaryDirectory() as tmp:
        seq = run(examples, methods, retriever, 1, Path(tmp) / "sequential.jsonl")
        bat = run(examples, methods, retriever, args.batch_size, Path(tmp) / "batched.jsonl")
    pairs = len(examples) * len(methods)
    content = {(r["qid"], r["method"]): r["final_content"] for r in seq["records"]}
    same = sum(1 for r in bat["records"] if content.get((r["qid"], r["method"])) == r["final_content"])
    engine: BatchEngine = bat["llm"]._engine
    print(f"{args.dataset}: {len(examples)} questions x {len(methods)} methods = {pairs} pairs, SmolLM2-135M")
    print("| run | s | pairs/min | errors |")
    print("|---|---:|---:|---:|")
    for name, r in (("sequential", seq), (f"batched (batch {args.batch_size})", bat)):
        print(f"| {name} | {r['seconds']:.1f} | {60 * pairs / r['seconds']:.1f} | {r['errors']} |")
    print(f"speed-up: {seq['seconds'] / bat['seconds']:.2f}x")
    print(f"identical final content: {same}/{pairs}")
    if engine is not None and engine.steps:
        print(
            f"engine: {engine.steps} decoding steps, {engine.rows / engine.steps:.2f} rows per step, "
            f"{100 * engine.reused_tokens / max(1, engine.prompt_tokens):.1f}% of "
            f"{engine.prompt_tokens} prompt tokens reused from the prefix cache"
        )


if __name__ == "__main__":
    main()
