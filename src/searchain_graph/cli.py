"""The ``searchain`` command line.

``searchain ask "question" --corpus FILE`` answers one question with the embedded
default stack (BM25 over the corpus, the default LLM, and the LLM reader) and prints
the answer, the cited steps and the passages they cite. Progress for each round goes
to stderr as the graph streams its updates.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import textwrap
import time
from collections.abc import Sequence
from typing import Any

from searchain_graph.context import TASKS, normalize_task


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="searchain", description="Search-in-the-Chain (SearChain) on LangGraph")
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="answer one question against a corpus")
    ask.add_argument("question", help="the (multi-hop) question")
    ask.add_argument(
        "--corpus",
        action="append",
        required=True,
        metavar="FILE",
        help="corpus file, JSONL or DPR TSV (repeat for several files)",
    )
    ask.add_argument(
        "--model",
        default=None,
        help="smollm2, openai:<model>, provider:<model>, hf:<org/name>, or a local model path "
        "(default: OpenAI when OPENAI_API_KEY is set, else SmolLM2-135M)",
    )
    ask.add_argument("--task", default="multihop", help=f"task family: {', '.join(TASKS)}")
    ask.add_argument("--max-rounds", type=int, default=5, help="most LLM-IR rounds (default 5)")
    ask.add_argument("--threshold", type=float, default=1.5, help="confidence threshold theta (default 1.5)")
    ask.add_argument("--max-new-tokens", type=int, default=256, help="generation budget per call, local models")
    ask.add_argument("--json", action="store_true", help="print the whole output as JSON")
    ask.add_argument("--quiet", action="store_true", help="no progress on stderr")
    return parser


def _progress(update: dict[str, Any]) -> str | None:
    for node, delta in update.items():
        if not isinstance(delta, dict):
            continue
        if node == "coq_generation" and delta.get("chain") is not None:
            chain = delta["chain"]
            unsolved = sum(1 for n in chain if n["unsolved"])
            return f"round {delta['rounds']}: CoQ with {len(chain)} nodes ({unsolved} unsolved)"
        if node == "ir_check":
            checks = (delta.get("tree") or [{}])[-1].get("checks", [])
            parts = [
                f"node {c['node']} {c['action']}"
                + (f" (f={c['confidence']:.2f})" if isinstance(c.get("confidence"), float) else "")
                for c in checks
            ]
            return "  IR: " + (", ".join(parts) if parts else "nothing new to check")
        if node == "feedback" and delta.get("feedback"):
            fb = delta["feedback"]
            return f"  feedback: {fb['kind']} of {fb['query']!r} -> {fb['answer']!r}"
        if node == "tracing":
            return "tracing: writing the final content"
    return None


def _print_result(out: dict[str, Any], seconds: float) -> None:
    print(f"Question: {out['question']}")
    print(f"Answer:   {out['answer']}\n")
    print(textwrap.fill(out["final_content"], width=100))
    print()
    for ref in out["references"]:
        doc = ref["document"]
        title = (doc or {}).get("metadata", {}).get("title", "")
        text = (doc or {}).get("page_content", "(no passage retrieved)")
        print(f"[{ref['index']}] {ref['query']} -> {ref['answer']}  ({ref['source']})")
        print(textwrap.indent(textwrap.shorten(f"{title}: {text}" if title else text, width=300), "    "))
    usage = out["usage"]
    print(
        f"\n{out['rounds']} round(s), {usage['llm_calls']} LLM calls, {usage['words_in']} words in / "
        f"{usage['words_out']} out, {usage['retrieval_calls']} retrievals, {usage['reader_calls']} reads, "
        f"{seconds:.1f} s"
    )
    for warning in out["warnings"]:
        print(f"note: {warning}", file=sys.stderr)


def _ask(args: argparse.Namespace) -> int:
    from searchain_graph.graph import create_searchain_graph
    from searchain_graph.llm import TransformersChatModel, load_chat_model
    from searchain_graph.reader import LLMReader
    from searchain_graph.retrieval import BM25Retriever

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.quiet:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    task = normalize_task(args.task)
    started = time.perf_counter()
    retriever = BM25Retriever.from_files(args.corpus, k=1)
    say(f"indexed {len(retriever)} passages in {time.perf_counter() - started:.1f} s")
    t0 = time.perf_counter()
    llm = load_chat_model(args.model, max_new_tokens=args.max_new_tokens)
    if isinstance(llm, TransformersChatModel):
        llm.load()
    say(f"loaded {getattr(llm, 'model_name', None) or type(llm).__name__} in {time.perf_counter() - t0:.1f} s")
    graph = create_searchain_graph(
        llm, retriever, LLMReader(llm), max_rounds=args.max_rounds, confidence_threshold=args.threshold, task=task
    )
    t0 = time.perf_counter()
    out: dict[str, Any] | None = None
    for mode, chunk in graph.stream({"question": args.question}, stream_mode=["updates", "values"]):
        if not isinstance(chunk, dict):
            continue
        if mode == "updates":
            line = _progress(chunk)
            if line:
                say(line)
        else:
            out = chunk
    seconds = time.perf_counter() - t0
    assert out is not None
    result = {
        k: out[k] for k in ("question", "answer", "final_content", "references", "rounds", "tree", "usage", "warnings")
    }
    if args.json:
        print(json.dumps({**result, "seconds": round(seconds, 3)}, indent=2, ensure_ascii=False))
    else:
        _print_result(result, seconds)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``searchain`` command."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        if args.command == "ask":
            return _ask(args)
    except (FileNotFoundError, ValueError) as exc:
        print(f"searchain: error: {exc}", file=sys.stderr)
        return 2
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
