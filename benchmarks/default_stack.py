"""Cost of one question with the embedded default stack (compare with the paper's Table 5).

Runs SearChain with SmolLM2-135M (or ``--model``), BM25 over the shipped HotpotQA paragraphs and
the LLM reader on the first N HotpotQA questions, and prints per-question figures: wall time,
rounds, reasoning-LLM calls and words/tokens in and out, plus what the LLM reader spent, and
cover-EM for honesty (a 135M model is not expected to answer well).

    python benchmarks/default_stack.py --questions 10
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

from searchain_graph import BM25Retriever, LLMReader, TransformersChatModel, create_searchain_graph, load_chat_model
from searchain_graph.evaluation.metrics import cover_em

ROOT = Path(__file__).resolve().parents[1]
PAPER = {"words_in": 390, "words_out": 189, "rounds": 2.21, "seconds": 8.52}


class ReaderUsage(BaseCallbackHandler):
    """Counts the reader's LLM calls and words (runs tagged ``searchain:reader``)."""

    def __init__(self) -> None:
        self.calls = 0
        self.words_in = 0
        self.words_out = 0
        self._reader_runs: set[UUID] = set()

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        if "searchain:reader" in (kwargs.get("tags") or []):
            self._reader_runs.add(run_id)
            self.calls += 1
            self.words_in += sum(len(m.text.split()) for batch in messages for m in batch)

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        if run_id in self._reader_runs:
            self.words_out += sum(len(g.text.split()) for gens in response.generations for g in gens)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=10)
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--max-rounds", type=int, default=5)
    parser.add_argument(
        "--data", type=Path, default=ROOT / "examples/data/hotpotqa_dev20_questions.jsonl", help="IRCoT-format JSONL"
    )
    args = parser.parse_args()

    t0 = time.perf_counter()
    llm = load_chat_model(args.model)
    if isinstance(llm, TransformersChatModel):
        llm.load()
    load_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    retriever = BM25Retriever.from_files(ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl")
    index_s = time.perf_counter() - t0
    graph = create_searchain_graph(llm, retriever, LLMReader(llm), max_rounds=args.max_rounds)

    with args.data.open(encoding="utf-8") as handle:
        records = [json.loads(line) for line in handle][: args.questions]
    rows = []
    for record in records:
        usage_cb = ReaderUsage()
        start = time.perf_counter()
        out = graph.invoke({"question": record["question_text"]}, config={"callbacks": [usage_cb]})
        seconds = time.perf_counter() - start
        golds = [span for obj in record["answers_objects"] for span in obj["spans"]]
        rows.append(
            {
                "seconds": seconds,
                "rounds": out["rounds"],
                **{k: out["usage"][k] for k in ("llm_calls", "words_in", "words_out", "input_tokens", "output_tokens")},
                "reader_llm_calls": usage_cb.calls,
                "reader_words_in": usage_cb.words_in,
                "reader_words_out": usage_cb.words_out,
                "path_nodes": len(out["references"]),
                "corrected": sum(r["source"] == "corrected" for r in out["references"]),
                "completed": sum(r["source"] == "completed" for r in out["references"]),
                "cover_em": cover_em(out["answer"], golds),
            }
        )
        print(
            f"{record['question_id']}: {seconds:5.1f} s, {out['rounds']} rounds, answer={out['answer'][:40]!r}",
            flush=True,
        )

    def mean(key: str) -> float:
        return statistics.fmean(float(r[key]) for r in rows)

    print(f"\nmodel={args.model}  load {load_s:.1f} s  BM25 index of {len(retriever)} passages {index_s:.2f} s")
    print(f"questions: {len(rows)} (HotpotQA dev, IRCoT subsample), max_rounds={args.max_rounds}\n")
    print("| per question (mean) | this run | paper, Table 5 (gpt-3.5) |")
    print("|---|---|---|")
    walls = [r["seconds"] for r in rows]
    print(f"| wall time, s | {mean('seconds'):.1f} (median {statistics.median(walls):.1f}) | {PAPER['seconds']} |")
    print(f"| rounds | {mean('rounds'):.2f} | {PAPER['rounds']} |")
    print(f"| reasoning LLM calls (CoQ + tracing) | {mean('llm_calls'):.2f} | - |")
    print(f"| words in / out, reasoning LLM | {mean('words_in'):.0f} / {mean('words_out'):.0f} | 390 / 189 |")
    print(f"| tokens in / out, reasoning LLM | {mean('input_tokens'):.0f} / {mean('output_tokens'):.0f} | - |")
    reader_words = f"{mean('reader_words_in'):.0f} / {mean('reader_words_out'):.0f}"
    print(f"| LLM-reader calls, words in / out | {mean('reader_llm_calls'):.2f}, {reader_words} | (DPR reader) |")
    sources = f"{mean('corrected'):.2f}, {mean('completed'):.2f}"
    print(f"| path nodes (corrected, completed) | {mean('path_nodes'):.2f} ({sources}) | - |")
    print(f"| cover-EM | {100 * mean('cover_em'):.1f}% | 56.91% (SearChain, HotpotQA) |")


if __name__ == "__main__":
    main()
