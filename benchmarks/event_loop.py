"""How long SearChain's ``ainvoke`` holds the event loop, on the real default stack, once it is loaded.

A server runs many graphs on one event loop; a step that computes on the loop stalls every other
request. This runs questions of a HotpotQA file through ``graph.ainvoke`` with the default stack
(Qwen2.5-Coder-1.5B on llama.cpp, BM25 over the file's paragraphs re-ranked by the bundled reader,
the tuned preset with its duplicate check by meaning) after one warm-up question, and measures the
loop two ways at once:

- asyncio's debug mode, ``loop.slow_callback_duration`` = 50 ms: every callback or task step that
  ran longer is counted (asyncio logs it as "Executing ... took N seconds");
- a heartbeat task that sleeps 5 ms and records each gap between its wake-ups: the longest gap
  is the longest time no other coroutine could have run.

It stops after ``--questions`` questions, or once ``--three-rounds`` questions that took three
rounds or more were measured. Other processes on the machine lengthen gaps (the heartbeat is
wall time); run it on an otherwise idle machine for figures to quote.

    python benchmarks/event_loop.py --questions 10 --three-rounds 2
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import time
from pathlib import Path
from typing import Any

from searchain_graph.cli.main import _build_parser
from searchain_graph.cli.stack import load_stack
from searchain_graph.evaluation.dataset_loading import corpus_paragraphs, load_dataset
from searchain_graph.method.graph import create_searchain_graph

ROOT = Path(__file__).resolve().parents[1]
CHOOSE = ROOT.parent / "shared/data/hotpotqa/hotpotqa_validation.choose.jsonl"
SLOW = 0.05
_TOOK = re.compile(r"took (\d+\.\d+) seconds")


class SlowCallbacks(logging.Handler):
    """asyncio's "Executing <callback> took N seconds" records, their durations kept."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.durations: list[float] = []
        self.examples: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        found = _TOOK.search(text)
        if found:
            self.durations.append(float(found.group(1)))
            if len(self.examples) < 3:
                self.examples.append(text[:300])


async def measured(graph: Any, question: str) -> tuple[dict[str, Any], list[float], float]:
    """``graph.ainvoke`` of ``question`` beside a heartbeat: the output, the gaps and the seconds."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def heartbeat() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            gaps.append(now - last - 0.005)
            last = now

    beat = asyncio.create_task(heartbeat())
    started = time.perf_counter()
    out = await graph.ainvoke({"question": question})
    seconds = time.perf_counter() - started
    done.set()
    await beat
    return out, gaps, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=CHOOSE, help="a HotpotQA file (its own layout or IRCoT's)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--questions", type=int, default=10, help="at most this many questions after the warm-up")
    parser.add_argument("--three-rounds", type=int, default=2, help="stop once this many took three rounds or more")
    parser.add_argument("--skip", type=int, default=0, help="start after this many questions of the file")
    args = parser.parse_args()

    examples = load_dataset("hotpotqa", str(args.data))
    cli = _build_parser().parse_args(["eval", "--dataset", "hotpotqa", "--data", str(args.data), "--model", args.model])
    stack = load_stack(cli, say=print, documents=corpus_paragraphs(examples), load_reader_now=True)
    graph = create_searchain_graph(stack.llm, stack.retriever, stack.reader)
    slow = SlowCallbacks()
    logging.getLogger("asyncio").addHandler(slow)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        warm = examples[args.skip]
        out, _, seconds = await measured(graph, warm["question"])  # loads the encoder, fills the caches
        print(f"warm-up: {out['rounds']} round(s), {seconds:.1f} s (not counted)")
        loop.set_debug(True)
        loop.slow_callback_duration = SLOW
        worst_gap, three, rows = 0.0, 0, []
        for example in examples[args.skip + 1 : args.skip + 1 + args.questions]:
            before = len(slow.durations)
            out, gaps, seconds = await measured(graph, example["question"])
            over = slow.durations[before:]
            worst_gap = max(worst_gap, max(gaps, default=0.0))
            rows.append((out["rounds"], seconds, max(gaps, default=0.0), len(over), max(over, default=0.0)))
            print(
                f"{out['rounds']} round(s), {seconds:5.1f} s: longest heartbeat gap {1000 * rows[-1][2]:6.1f} ms, "
                f"{len(over)} step(s) over {1000 * SLOW:.0f} ms (longest {1000 * rows[-1][4]:.0f} ms)"
            )
            three += out["rounds"] >= 3
            if three >= args.three_rounds:
                break
        print(f"\n{len(rows)} questions ({three} of three rounds or more) on {stack.model_name}, {stack.source}")
        print(f"longest heartbeat gap: {1000 * worst_gap:.1f} ms")
        print(f"callbacks over {1000 * SLOW:.0f} ms: {len(slow.durations)}")
        for text in slow.examples:
            print("  " + text)

    asyncio.run(run())


if __name__ == "__main__":
    main()
