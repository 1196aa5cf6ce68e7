"""SearChain's questions per hour with the default stack: the calls it saves, and reruns from the LLM-call cache.

On the first N questions of a HotpotQA file (default: the choose set), with Qwen2.5-Coder-1.5B on
llama.cpp, BM25 over the file's paragraphs re-ranked by the bundled reader (``searchain eval``'s
stack), it prints per configuration the questions per hour, the seconds spent inside LLM calls,
and the LLM calls and generated tokens a question:

(a) **fresh**: the tuned preset as it was before it saved calls (:data:`BEFORE`: no ``close_early``,
    no ``compose_supported``, the paper's ``continuation="fresh"``) beside the tuned preset as it
    is, on the same questions in the same process, in turn question by question (the order
    alternates, so neither config always finds the other's first prompt in the engine's prefix
    cache). Neither uses an LLM cache.
(b) **reruns with the cache**: the tuned preset once more over the same questions with a fresh
    SQLite cache (LLM calls, retrievals and readings: ``searchain eval --cache``), then again after
    a θ change, and again after a tracing change: only the calls that the change alters run.

    python benchmarks/throughput.py --questions 20

Nothing else should run beside it: the figures are wall time on this machine.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler

from searchain_graph.cli.main import _build_parser
from searchain_graph.cli.stack import load_stack
from searchain_graph.evaluation.dataset_loading import corpus_paragraphs, load_dataset
from searchain_graph.evaluation.metrics import cover_em
from searchain_graph.llms.call_cache import SQLiteLLMCache
from searchain_graph.method.context import Context
from searchain_graph.method.graph import create_searchain_graph, reader_settings
from searchain_graph.method.ir_tasks import open_cache

ROOT = Path(__file__).resolve().parents[1]
CHOOSE = ROOT.parent / "shared/data/hotpotqa/hotpotqa_validation.choose.jsonl"
BEFORE = {
    "stop_at_final": False,
    "close_early": False,
    "check_on": False,
    "compose_supported": False,
    "continuation": "fresh",
}
"""The tuned preset as it was before it saved calls: every round and the tracing asked of the LLM."""


class LLMClock(BaseCallbackHandler):
    """Seconds between each chat model call's start and end, summed."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started: dict[UUID, float] = {}

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._started[run_id] = time.perf_counter()

    def on_llm_end(self, response: Any, *, run_id: UUID, **kwargs: Any) -> None:
        started = self._started.pop(run_id, None)
        if started is not None:
            self.seconds += time.perf_counter() - started


@dataclass
class Tally:
    """One configuration's figures over the questions."""

    name: str
    seconds: list[float] = field(default_factory=list)
    llm_seconds: list[float] = field(default_factory=list)
    calls: list[int] = field(default_factory=list)
    made: list[int] = field(default_factory=list)
    generated: list[int] = field(default_factory=list)
    prompt: list[int] = field(default_factory=list)
    correct: list[float] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    def add(self, out: dict[str, Any], seconds: float, llm_seconds: float, gold: list[str]) -> None:
        usage = out["usage"]
        hits = int(usage.get("llm_cache_hits", 0))
        self.seconds.append(seconds)
        self.llm_seconds.append(llm_seconds)
        self.calls.append(usage["llm_calls"])
        self.made.append(usage["llm_calls"] - hits)
        self.generated.append(usage["output_tokens"])
        self.prompt.append(usage["input_tokens"])
        self.correct.append(cover_em(out["answer"], gold))
        self.answers.append(out["answer"])

    def line(self) -> str:
        total = sum(self.seconds)
        return (
            f"{self.name:<34} {3600 * len(self.seconds) / total:7.1f} q/h  {total:7.1f} s  "
            f"LLM {sum(self.llm_seconds):7.1f} s  calls {statistics.mean(self.calls):4.2f} "
            f"(made {statistics.mean(self.made):4.2f})  tokens in {statistics.mean(self.prompt):6.0f} "
            f"out {statistics.mean(self.generated):5.1f}  cover-EM {100 * statistics.mean(self.correct):5.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--questions", type=int, default=20, help="(a)'s questions")
    parser.add_argument("--rerun-questions", type=int, default=None, help="(b)'s questions (default: (a)'s)")
    parser.add_argument("--data", type=Path, default=CHOOSE, help="a HotpotQA file (its own layout or IRCoT's)")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b")
    parser.add_argument("--theta-step", type=float, default=0.5, help="(b): θ moved by this much")
    parser.add_argument("--skip-fresh", action="store_true", help="only (b)")
    args = parser.parse_args()

    examples = load_dataset("hotpotqa", str(args.data))
    paragraphs = corpus_paragraphs(examples)
    reruns = examples[: args.rerun_questions or args.questions]
    examples = examples[: args.questions]
    cli = _build_parser().parse_args(["eval", "--dataset", "hotpotqa", "--data", str(args.data), "--model", args.model])
    stack = load_stack(cli, say=print, documents=paragraphs, load_reader_now=True)
    clock = LLMClock()
    config = {"callbacks": [clock]}

    def run(graph: Any, tally: Tally, example: dict[str, Any]) -> None:
        clock.seconds = 0.0
        t0 = time.perf_counter()
        out = graph.invoke({"question": example["question"]}, config=config)
        tally.add(out, time.perf_counter() - t0, clock.seconds, example["answers"])

    if not args.skip_fresh:
        before = create_searchain_graph(stack.llm, stack.retriever, stack.reader, Context(**BEFORE))
        now = create_searchain_graph(stack.llm, stack.retriever, stack.reader, Context())
        tallies = {"before": Tally("(a) fresh, before the switches"), "now": Tally("(a) fresh, now")}
        for i, example in enumerate(examples):
            order = [("before", before), ("now", now)] if i % 2 == 0 else [("now", now), ("before", before)]
            for key, graph in order:
                run(graph, tallies[key], example)
            print(f"question {i + 1}/{len(examples)}: {tallies['before'].seconds[-1]:.1f} s before, "
                  f"{tallies['now'].seconds[-1]:.1f} s now", flush=True)  # fmt: skip
        print()
        for tally in tallies.values():
            print(tally.line())
        speedup = sum(tallies["before"].seconds) / sum(tallies["now"].seconds)
        same = sum(a == b for a, b in zip(tallies["before"].answers, tallies["now"].answers, strict=True))
        print(f"questions per hour: {speedup:.2f}x; the same answer on {same} of {len(examples)}\n")

    with tempfile.TemporaryDirectory() as tmp:
        llm_cache, ir_cache = SQLiteLLMCache(Path(tmp) / "cache.sqlite"), open_cache(Path(tmp) / "cache.sqlite")
        theta = reader_settings(stack.reader)[0].confidence_threshold or 0.0

        def graph(**fields: Any) -> Any:
            return create_searchain_graph(
                stack.llm, stack.retriever, stack.reader, Context(**fields), cache=ir_cache, llm_cache=llm_cache
            )

        runs = {
            "(b) fresh, into the cache": graph(),
            f"(b) rerun, θ {theta:g} -> {theta + args.theta_step:g}": graph(
                confidence_threshold=theta + args.theta_step
            ),
            "(b) rerun, tracing 'reader'": graph(tracing="reader"),
        }
        rows = []
        for name, g in runs.items():
            tally = Tally(name)
            for example in reruns:
                run(g, tally, example)
            rows.append(tally)
            print(tally.line(), flush=True)
        fresh = sum(rows[0].seconds)
        for tally in rows[1:]:
            print(f"{tally.name}: {fresh / sum(tally.seconds):.1f}x fewer seconds than the fresh run")


if __name__ == "__main__":
    main()
