"""The ``searchain`` command line.

``searchain index CORPUS... --out DIR`` builds an on-disk index (BM25, or ColBERT with
the ``colbert`` extra), with a progress bar and the throughput at the end; a broken
corpus line stops it with the file and line number, and leaves any previous index at
``DIR`` as it was.

``searchain ask "question" --corpus FILE`` (or ``--index DIR``) answers one question
with the embedded default stack (BM25, the default LLM, and the LLM reader, or
``--reader dpr`` / ``--reader extractive``) and prints the answer, the cited steps and
the passages they cite. Progress for each round goes to stderr as the graph streams
its updates.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchain_graph.method.context import TASKS, normalize_task


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="searchain", description="Search-in-the-Chain (SearChain) on LangGraph")
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="answer one question against a corpus")
    ask.add_argument("question", help="the (multi-hop) question")
    source = ask.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--corpus",
        action="append",
        metavar="FILE",
        help="corpus file (JSONL, DPR TSV, or a QA dataset file's paragraphs), indexed with BM25 in memory; "
        "repeat for several files",
    )
    source.add_argument("--index", metavar="DIR", help="an index directory built by `searchain index`")
    ask.add_argument(
        "--model",
        default=None,
        help="smollm2, openai:<model>, provider:<model>, hf:<org/name>, or a local model path "
        "(default: OpenAI when OPENAI_API_KEY is set, else SmolLM2-135M)",
    )
    ask.add_argument("--task", default="multihop", help=f"task family: {', '.join(TASKS)}")
    ask.add_argument("--max-rounds", type=int, default=5, help="most LLM-IR rounds (default 5)")
    ask.add_argument(
        "--reader",
        default="llm",
        metavar="KIND[:MODEL]",
        help="llm (the chat model reads; default), dpr[:MODEL] (the paper's DPR reader, default "
        "facebook/dpr-reader-multiset-base) or extractive[:MODEL] (any SQuAD-style QA model); "
        "MODEL is a hub name or a local directory",
    )
    ask.add_argument(
        "--threshold", type=float, default=None, help="confidence threshold theta (default: the reader's, 1.5)"
    )
    ask.add_argument("--max-new-tokens", type=int, default=256, help="generation budget per call, local models")
    ask.add_argument("--json", action="store_true", help="print the whole output as JSON")
    ask.add_argument("--quiet", action="store_true", help="no progress on stderr")
    ev = sub.add_parser("eval", help="evaluate methods on a QA dataset (resumable JSONL, Markdown report)")
    ev.add_argument("--dataset", required=True, help="hotpotqa, musique, 2wikimultihopqa, strategyqa, fever, eli5, ...")
    ev.add_argument("--data", required=True, metavar="FILE", help="the dataset file, in its native format")
    ev.add_argument("--methods", default="all", help="comma-separated methods, or all (default)")
    ev.add_argument("--limit", type=int, default=None, help="first N questions")
    ev.add_argument(
        "--index", default=None, metavar="DIR", help="retrieval index (default: BM25 over the dataset's paragraphs)"
    )
    ev.add_argument("--corpus", action="append", default=None, metavar="FILE", help="corpus file(s) for BM25 instead")
    ev.add_argument("--model", default=None, help="the LLM, as for `searchain ask`")
    ev.add_argument("--reader", default="llm", metavar="KIND[:MODEL]", help="as for `searchain ask`")
    ev.add_argument("--max-new-tokens", type=int, default=256, help="generation budget per call, local models")
    ev.add_argument(
        "--batch-size",
        type=int,
        default=1,
        help="local models: decode this many calls together (continuous batching; default 1, sequential)",
    )
    ev.add_argument(
        "--concurrency", type=int, default=None, help="pairs at once (default: 4 remote; --batch-size local)"
    )
    ev.add_argument("--out", default=None, metavar="FILE", help="results JSONL (default results/DATASET.jsonl)")
    ev.add_argument("--report", default=None, metavar="DIR", help="report directory (default: beside --out)")
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    rep = sub.add_parser("report", help="write the Markdown report and plots for results files")
    rep.add_argument("results", nargs="+", metavar="FILE", help="results JSONL files from `searchain eval`")
    rep.add_argument("--out", required=True, metavar="DIR", help="report directory")
    rep.add_argument("--title", default="SearChain evaluation")
    index = sub.add_parser("index", help="build an on-disk index over corpus files")
    index.add_argument("corpus", nargs="+", metavar="CORPUS", help="corpus files (JSONL, DPR TSV, QA dataset files)")
    index.add_argument("--out", required=True, metavar="DIR", help="index directory (replaced when complete)")
    index.add_argument("--retriever", choices=("bm25", "colbert"), default="bm25", help="default: bm25")
    index.add_argument(
        "--checkpoint",
        default=None,
        help="ColBERT checkpoint, hub name or local directory (default colbert-ir/colbertv2.0)",
    )
    index.add_argument("--workers", type=int, default=None, help="BM25 tokenising processes (default: one per core)")
    index.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _index(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from searchain_graph.ir.index import build_index

    with tqdm(desc=f"indexing ({args.retriever})", unit=" passages", disable=args.quiet, file=sys.stderr) as bar:
        summary = build_index(
            args.corpus,
            args.out,
            retriever=args.retriever,
            checkpoint=args.checkpoint,
            workers=args.workers,
            progress=bar.update,
        )
    print(
        f"indexed {summary.passages:,} passages from {len(args.corpus)} file(s) in {summary.seconds:.1f} s "
        f"({summary.passages_per_second:,.0f} passages/s); {summary.retriever} index at {summary.directory} "
        f"({summary.size_bytes / 2**20:.1f} MiB)"
    )
    return 0


def _eval(args: argparse.Namespace) -> int:
    from tqdm.auto import tqdm

    from searchain_graph.evaluation.datasets import corpus_paragraphs, load_dataset
    from searchain_graph.evaluation.harness import parse_methods, run_evaluation
    from searchain_graph.evaluation.report import write_report
    from searchain_graph.ir.bm25_retriever import BM25Retriever
    from searchain_graph.ir.index import load_index
    from searchain_graph.ir.readers.load import load_reader
    from searchain_graph.llms.chat_model import TransformersChatModel, load_chat_model

    methods = parse_methods(args.methods)
    examples = load_dataset(args.dataset, args.data)
    if args.index:
        retriever: Any = load_index(args.index, k=1)
    elif args.corpus:
        retriever = BM25Retriever.from_files(args.corpus, k=1)
    else:
        paragraphs = corpus_paragraphs(examples)  # the open-domain corpus: all questions' paragraphs
        if not paragraphs:
            raise ValueError(f"{args.data} carries no paragraphs: pass --index DIR or --corpus FILE")
        retriever = BM25Retriever.from_documents(paragraphs, k=1)
    if args.limit is not None:
        examples = examples[: args.limit]
    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, got {args.batch_size}")
    llm = load_chat_model(args.model, max_new_tokens=args.max_new_tokens, max_batch_size=args.batch_size)
    local = isinstance(llm, TransformersChatModel)
    if isinstance(llm, TransformersChatModel):
        llm.response_cache = 4096  # SearChain and its ablations send the same first prompt
        llm.load()
    concurrency = args.concurrency or (args.batch_size if local else 4)
    out = Path(args.out or Path("results") / f"{examples[0]['dataset'] if examples else args.dataset}.jsonl")
    model_name = getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    correct: dict[str, list[float]] = {}
    with tqdm(
        total=len(examples) * len(methods), desc="eval", unit=" runs", disable=args.quiet, file=sys.stderr
    ) as bar:

        def progress(record: dict[str, Any]) -> None:
            correct.setdefault(record["method"], []).append(record.get("metrics", {}).get("cover_em", 0.0))
            bar.update(1)
            bar.set_postfix_str(" ".join(f"{m}={100 * sum(v) / len(v):.0f}" for m, v in correct.items()), refresh=False)

        summary = run_evaluation(
            examples,
            methods,
            llm=llm,
            retriever=retriever,
            reader=load_reader(args.reader, llm),
            out_path=out,
            concurrency=concurrency,
            progress=progress,
            extra={
                "model": str(model_name),
                "reader": args.reader,
                "retriever": type(retriever).__name__,
                "concurrency": concurrency,
            },
        )
        bar.update(summary.skipped)
    written = write_report(summary.records, args.report or out.parent / f"{out.stem}-report")
    print(
        f"{summary.ran} run(s), {summary.skipped} already in {out}, {summary.errors} error(s); "
        f"report: {', '.join(str(p) for p in written)}"
    )
    engine = getattr(llm, "_engine", None)
    if engine is not None and engine.steps:
        print(
            f"batch engine: {engine.rows / engine.steps:.2f} rows per decoding step, "
            f"{100 * engine.reused_tokens / max(1, engine.prompt_tokens):.0f}% of prompt tokens from the prefix cache"
        )
    return 0


def _report(args: argparse.Namespace) -> int:
    from searchain_graph.evaluation.harness import read_records
    from searchain_graph.evaluation.report import write_report

    records = [r for path in args.results for r in read_records(path)]
    if not records:
        raise ValueError(f"no records in {', '.join(args.results)}")
    for path in write_report(records, args.out, title=args.title):
        print(path)
    return 0


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
    from searchain_graph.ir.bm25_retriever import BM25Retriever
    from searchain_graph.ir.index import load_index
    from searchain_graph.ir.readers.load import load_reader
    from searchain_graph.llms.chat_model import TransformersChatModel, load_chat_model
    from searchain_graph.method.graph import create_searchain_graph

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    if args.quiet:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    task = normalize_task(args.task)
    started = time.perf_counter()
    if args.index:
        retriever = load_index(args.index, k=1)
        say(f"opened the index at {args.index} in {time.perf_counter() - started:.1f} s")
    else:
        retriever = BM25Retriever.from_files(args.corpus, k=1)
        say(f"indexed {len(retriever)} passages in {time.perf_counter() - started:.1f} s")
    t0 = time.perf_counter()
    llm = load_chat_model(args.model, max_new_tokens=args.max_new_tokens)
    if isinstance(llm, TransformersChatModel):
        llm.load()
    say(f"loaded {getattr(llm, 'model_name', None) or type(llm).__name__} in {time.perf_counter() - t0:.1f} s")
    graph = create_searchain_graph(
        llm,
        retriever,
        load_reader(args.reader, llm),
        max_rounds=args.max_rounds,
        confidence_threshold=args.threshold,
        task=task,
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
        if args.command == "index":
            return _index(args)
        if args.command == "eval":
            return _eval(args)
        if args.command == "report":
            return _report(args)
    except (FileNotFoundError, FileExistsError, ValueError, ImportError) as exc:
        print(f"searchain: error: {exc}", file=sys.stderr)
        return 2
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
