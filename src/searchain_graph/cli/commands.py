"""The ``searchain`` sub-commands: what ``ask``, ``index``, ``eval`` and ``report`` do.

``searchain index CORPUS... --out DIR`` builds an on-disk index (BM25, or ColBERT with
the ``colbert`` extra), with a progress bar and the throughput at the end; a broken
corpus line stops it with the file and line number, and leaves any previous index at
``DIR`` as it was.

``searchain ask "question" --corpus FILE`` (or ``--index DIR``) answers one question
with the embedded default stack (BM25, the default LLM, and the LLM reader, or
``--reader dpr`` / ``--reader extractive``) and prints the answer, the cited steps and
the passages they cite. Progress for each round goes to stderr as the graph streams
its updates.

``searchain eval`` runs methods of :mod:`searchain_graph.evaluation.methods` on a dataset
file (resumable JSONL records, then the Markdown report); ``searchain report`` writes the
report for existing results files.

Each command takes the parsed arguments of :mod:`searchain_graph.cli.main` and returns the
exit status. ``ask``, ``serve`` and ``eval`` load their LLM, retriever and reader with
:func:`searchain_graph.cli.stack.load_stack`. Heavy modules (the method, IR, local LLMs, the
evaluation) are imported inside the commands, so that building the parser and ``searchain
--help`` stay fast.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from searchain_graph.cli.arguments import rerank_of
from searchain_graph.cli.settings import context_of, set_fields
from searchain_graph.cli.stack import load_stack
from searchain_graph.ir.readers.calibration import reader_key
from searchain_graph.method.context import PRESET_VALUES, Context

EVAL_RESPONSE_CACHE = 4096
"""LLM replies ``searchain eval`` keeps in memory without ``--cache`` (its ablations share SearChain's first prompt)."""


def run_index(args: argparse.Namespace) -> int:
    """``searchain index``: build an on-disk index over corpus files."""
    from tqdm.auto import tqdm

    from searchain_graph.ir.index import build_index
    from searchain_graph.ir.index_dir import check_index_target

    check_index_target(args.out)  # a wrong --out is one line, before any work (and before the progress bar)
    with tqdm(desc=f"indexing ({args.retriever})", unit=" passages", disable=args.quiet, file=sys.stderr) as bar:
        summary = build_index(
            args.corpus,
            args.out,
            retriever=args.retriever,
            checkpoint=args.checkpoint,
            workers=args.workers,
            k1=args.bm25_k1,
            b=args.bm25_b,
            progress=bar.update,
        )
    print(
        f"indexed {summary.passages:,} passages from {len(args.corpus)} file(s) in {summary.seconds:.1f} s "
        f"({summary.passages_per_second:,.0f} passages/s); {summary.retriever} index at {summary.directory} "
        f"({summary.size_bytes / 2**20:.1f} MiB)"
    )
    return 0


def run_eval(args: argparse.Namespace) -> int:
    """``searchain eval``: run methods on a dataset file, append the records, write the report.

    The report covers the run's questions and every method the results file holds for them.
    """
    from tqdm.auto import tqdm

    from searchain_graph.evaluation.dataset_loading import corpus_paragraphs, load_dataset
    from searchain_graph.evaluation.harness import run_evaluation, runtime_versions, with_gold
    from searchain_graph.evaluation.methods import parse_methods
    from searchain_graph.evaluation.report import write_report

    methods = parse_methods(args.methods)
    examples = load_dataset(args.dataset, args.data)
    paragraphs = None
    if not args.index and not args.corpus:
        paragraphs = corpus_paragraphs(examples)  # the open-domain corpus: all questions' paragraphs
        if not paragraphs:
            raise ValueError(f"{args.data} carries no paragraphs: pass --index DIR or --corpus FILE")
    examples = examples[args.skip :]  # the corpus keeps every question's paragraphs
    if args.limit is not None:
        examples = examples[: args.limit]
    stack = load_stack(
        args,
        max_batch_size=args.batch_size,
        llm_cache=_open_llm_cache(args.cache, memory=EVAL_RESPONSE_CACHE),
        documents=paragraphs,
        load_reader_now=False,
    )
    concurrency = args.concurrency or (args.batch_size if stack.local else 4)
    out = Path(args.out or Path("results") / f"{examples[0]['dataset'] if examples else args.dataset}.jsonl")
    correct: dict[str, list[float]] = {}
    calls = [0, 0]  # this run's LLM calls, and those the LLM cache answered
    with tqdm(
        total=len(examples) * len(methods), desc="eval", unit=" runs", disable=args.quiet, file=sys.stderr
    ) as bar:

        def progress(record: dict[str, Any]) -> None:
            correct.setdefault(record["method"], []).append(record.get("metrics", {}).get("cover_em", 0.0))
            usage = record.get("usage") or {}
            calls[0] += int(usage.get("llm_calls") or 0)
            calls[1] += int(usage.get("llm_cache_hits") or 0)
            bar.update(1)
            bar.set_postfix_str(" ".join(f"{m}={100 * sum(v) / len(v):.0f}" for m, v in correct.items()), refresh=False)

        summary = run_evaluation(
            examples,
            methods,
            llm=stack.llm,
            retriever=stack.retriever,
            reader=stack.reader,
            out_path=out,
            concurrency=concurrency,
            progress=progress,
            extra={
                "model": stack.model_name,
                "llm_backend": getattr(stack.llm, "backend", None),  # a local model's: llama.cpp, torch, onnx-int4, ...
                # the generation budget per call (a local model's max_new_tokens, a server model's max_tokens)
                "max_new_tokens": getattr(stack.llm, "max_new_tokens", None) or getattr(stack.llm, "max_tokens", None),
                "reader": args.reader,
                # which weights and f, e.g. "bundled:minilm_dpr:8112:joint"
                "reader_key": None if stack.reader is None else reader_key(stack.reader),
                "retriever": type(stack.retriever).__name__,
                "rerank": rerank_of(args),  # the retriever's top N re-ranked by the reader (0: none)
                "concurrency": concurrency,
                "versions": runtime_versions(),  # what computed the replies (ONNX Runtime, torch, ...)
            },
            options=eval_options(args),
            rerun_contended=args.rerun_contended,
            rerun_threshold=args.rerun_threshold,
            cache=_open_cache(args.cache),
            keep_text=not args.without_text,
        )
        bar.update(summary.skipped)
    # The report covers every method the file holds for this run's questions, not only the methods
    # run now: a run that adds methods to a file never leaves its report without the earlier ones.
    shown = with_gold(summary.question_records, examples)
    written = write_report(shown, args.report or out.parent / f"{out.stem}-report")
    pages = sum(1 for p in written if p.suffix == ".md") - 1
    print(
        f"{summary.ran} run(s), {summary.skipped} already in {out}, {summary.errors} error(s); "
        f"report: {written[0]}" + (f" (and {pages} tree page(s) beside it)" if pages else "")
    )
    stats = getattr(stack.decoder, "stats", None)
    if stats is not None and stats.calls:
        print(
            f"prefix cache: {stats.reused_tokens:,} of {stats.prompt_tokens:,} prompt tokens "
            f"({100 * stats.reused_tokens / max(1, stats.prompt_tokens):.0f}%) taken from the engine's cache, "
            f"{stats.calls} LLM calls"
        )
    if calls[0]:
        print(f"LLM cache: {calls[1]:,} of this run's {calls[0]:,} LLM calls answered from it")
    if summary.ran and summary.errors == summary.ran:
        print(f"every one of the {summary.ran} run(s) failed: see the error field in {out}", file=sys.stderr)
        return 1
    return 0


def _open_llm_cache(path: str | None, *, memory: int = 0) -> Any:
    """The LLM-call cache of ``--cache FILE`` (the IR cache's file); without one, ``memory`` replies in memory."""
    if path is not None:
        from searchain_graph.llms.call_cache import SQLiteLLMCache

        return SQLiteLLMCache(path)
    if memory:
        from langchain_core.caches import InMemoryCache

        return InMemoryCache(maxsize=memory)
    return None


def _open_cache(path: str | None) -> Any:
    from searchain_graph.method.ir_tasks import open_cache  # LangGraph: loaded by the commands that use it

    return open_cache(path)


def run_report(args: argparse.Namespace) -> int:
    """``searchain report``: write the Markdown report and plots for results files."""
    from searchain_graph.evaluation.dataset_loading import load_dataset
    from searchain_graph.evaluation.harness import read_records, with_gold
    from searchain_graph.evaluation.report import write_report

    records = [r for spec in args.results for r in labelled_records(spec, read_records)]
    if not records:
        raise ValueError(f"no records in {', '.join(args.results)}")
    for spec in args.data:  # DATASET=FILE: the gold fields records written before them lack
        dataset, sep, path = spec.partition("=")
        if not sep or not dataset or not path:
            raise ValueError(f"--data takes DATASET=FILE (e.g. musique=dev.jsonl), got {spec!r}")
        records = with_gold(records, load_dataset(dataset, path))
    for path in write_report(records, args.out, title=args.title):
        print(path)
    return 0


def labelled_records(spec: str, read: Callable[[str], list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The records of a ``searchain report`` argument: ``FILE``, or ``LABEL=FILE``.

    A label names a configuration: its records' methods become ``method@LABEL`` ("searchain@path"),
    so that two files of one method (a dev comparison of two settings) stand side by side in one
    report, and the paired differences set each against ``searchain``. A file whose own name holds
    "=" is read as a file.

    Raises:
        ValueError: the label is empty or holds "@", or the file is missing.
    """
    label, sep, path = spec.partition("=")
    if not sep or Path(spec).exists():
        return read(spec)
    if not label or "@" in label or not Path(path).is_file():
        raise ValueError(f"a results argument is FILE or LABEL=FILE (a label without '@'), got {spec!r}")
    return [{**r, "method": f"{r['method']}@{label}"} for r in read(path)]


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    r"""``text`` with its control characters (ANSI escapes among them) shown as ``\x1b``, not obeyed.

    Passages come from corpora and remote indexes: printed raw, an escape sequence in one could set
    the window's title, clear the screen or rewrite what was printed before it.
    """
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


def _print_result(out: dict[str, Any], seconds: float) -> None:
    if sys.stdout.isatty():
        out = json.loads(json.dumps(out, ensure_ascii=False), object_hook=_safe_strings)
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
    cached = usage.get("llm_cache_hits", 0), usage.get("retrieval_cache_hits", 0), usage.get("reader_cache_hits", 0)
    if any(cached):
        print(f"from the cache: {cached[0]} LLM calls, {cached[1]} retrievals, {cached[2]} reads")
    for warning in out["warnings"]:
        print(f"note: {terminal_safe(warning) if sys.stderr.isatty() else warning}", file=sys.stderr)


def _safe_strings(obj: dict[str, Any]) -> dict[str, Any]:
    return {key: terminal_safe(value) if isinstance(value, str) else _safe_list(value) for key, value in obj.items()}


def _safe_list(value: Any) -> Any:
    if isinstance(value, list):
        return [terminal_safe(v) if isinstance(v, str) else _safe_list(v) for v in value]
    return value


def eval_options(args: argparse.Namespace) -> dict[str, Any]:
    """The ``Context`` fields ``eval`` gives SearChain and its ablations, and the layout of ``searchain_no_ir``.

    The demonstrations' layout is always named (the preset's when not given), so that the records
    say which one ran, and w/o IR's chain is asked in the layout SearChain's is.
    """
    chosen = set_fields(args)
    context = Context(**chosen)
    chosen["demonstrations"] = context.demonstrations or PRESET_VALUES[context.preset]["demonstrations"]
    return chosen


def build_graph(
    args: argparse.Namespace, say: Callable[[str], None], *, checkpointer: Any = None, max_batch_size: int = 1
) -> tuple[Any, str]:
    """The SearChain graph that ``ask`` and ``serve`` build from their options, and a line saying what it runs.

    Args:
        args: ``--corpus`` or ``--index``, ``--model``, ``--llm-backend``, ``--reader``,
            ``--max-new-tokens``, ``--llm-timeout``, the ``Context`` options
            (:mod:`searchain_graph.cli.settings`), ``--cache`` and (``serve``) ``--review``.
        say: Where the progress of loading goes.
        checkpointer: Passed to :func:`create_searchain_graph`.
        max_batch_size: Local models: calls decoded together.
    """
    from searchain_graph.method.graph import create_searchain_graph

    context = context_of(args)
    stack = load_stack(
        args, say=say, max_batch_size=max_batch_size, llm_cache=_open_llm_cache(getattr(args, "cache", None))
    )
    graph = create_searchain_graph(
        stack.llm,
        stack.retriever,
        stack.reader,
        context,
        checkpointer=checkpointer,
        review=bool(getattr(args, "review", False)),
        cache=_open_cache(getattr(args, "cache", None)),
    )
    about = (
        f"LLM {stack.model_name}; {stack.source}; reader {args.reader}; preset {context.preset}; "
        f"task {context.task}; at most {context.max_rounds} rounds"
    ) + ("; a person reviews each correction" if getattr(args, "review", False) else "")
    about += f"; LLM and IR cache {args.cache}" if getattr(args, "cache", None) else ""
    return graph, about


def stop_on_interrupt() -> None:
    """Ctrl-C (SIGINT) ends the command at once with exit status 130, as in any shell command.

    The graph runs its steps in worker threads, where a local model's reply goes on in native code;
    a ``KeyboardInterrupt`` in the main thread would wait for them. Nothing is half-written: ``ask``
    writes its page and its output only at the end.
    """
    import os
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def stop(signum: int, frame: Any) -> None:
        sys.stderr.write("\nsearchain: interrupted\n")
        sys.stderr.flush()
        os._exit(130)

    signal.signal(signal.SIGINT, stop)


class RunFailedError(RuntimeError):
    """A question's run failed after everything loaded: the command exits 1 (2 is for usage errors)."""


def run_failure(exc: BaseException) -> str:
    """One line for a failed run: the LLM server's failure in words, else the error and the step's note."""
    from searchain_graph.llms.servers import describe_llm_failure

    described = describe_llm_failure(exc)
    if described is not None:
        return described
    notes = [n for n in getattr(exc, "__notes__", []) if "failed in round" in n]
    return notes[-1] if notes else f"the run failed: {type(exc).__name__}: {exc}"


def run_ask(args: argparse.Namespace) -> int:
    """``searchain ask``: answer one question with the SearChain graph, streaming its progress."""
    from searchain_graph.method.question import InvalidQuestionError
    from searchain_graph.method.state import OUTPUT_KEYS
    from searchain_graph.viz.progress import progress_line

    def say(msg: str) -> None:
        if not args.quiet:
            print(terminal_safe(msg) if sys.stderr.isatty() else msg, file=sys.stderr, flush=True)

    if args.quiet:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    graph, _ = build_graph(args, say)
    t0 = time.perf_counter()
    out: dict[str, Any] | None = None
    stop_on_interrupt()
    try:
        for mode, chunk in graph.stream({"question": args.question}, stream_mode=["updates", "values"]):
            if not isinstance(chunk, dict):
                continue
            if mode == "updates":
                line = progress_line(chunk, out)
                if line:
                    say(line)
            else:
                out = chunk
    except (InvalidQuestionError, KeyboardInterrupt):
        raise
    except Exception as exc:  # the run failed: not a usage error (exit 1, not 2)
        raise RunFailedError(run_failure(exc)) from exc
    seconds = time.perf_counter() - t0
    assert out is not None
    result = {k: out[k] for k in OUTPUT_KEYS}
    if args.html:
        from searchain_graph.viz import write_tree

        say(f"tree written to {write_tree(result, args.html)}")
    if args.json:
        print(json.dumps({**result, "seconds": round(seconds, 3)}, indent=2, ensure_ascii=False))
    else:
        _print_result(result, seconds)
    return 0
