"""``searchain calibrate``: choose a reader's θ on dev questions and save it for SearChain.

    searchain calibrate --reader dpr --dataset musique --data musique_ans_dev.jsonl --limit 100

builds oracle chains from the questions' gold decompositions (some sub-answers made wrong, some
unsolved), reads every node once with the reader, sweeps θ, applies the rule of
:mod:`searchain_graph.evaluation.calibration`, prints the table with the chosen row marked and the
choice, and saves θ for this reader (:mod:`searchain_graph.ir.readers.calibration`), where
:func:`~searchain_graph.method.graph.create_searchain_graph` finds it when given no θ. Data with no
gold decompositions yields no nodes: that is an error (exit status 2). Heavy modules are imported
when the command runs.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from searchain_graph.cli.arguments import positive_int
from searchain_graph.ir.readers import DEFAULT_READER
from searchain_graph.llms.backends import BACKENDS


def add_calibrate_parser(sub: Any) -> None:
    """Add ``calibrate`` to the sub-command parsers ``sub``."""
    cal = sub.add_parser(
        "calibrate",
        help="choose a reader's confidence threshold theta on dev questions, and save it",
        description="Choose the reader's theta on gold chains of dev questions (MuSiQue, Bamboogle: "
        "datasets with gold decompositions) and save it; `searchain ask` and `eval` then use it for "
        "this reader unless --threshold is given.",
    )
    cal.add_argument(
        "--reader",
        default=DEFAULT_READER,
        metavar="KIND[:MODEL]",
        help=f"as for `searchain ask` (default {DEFAULT_READER})",
    )
    cal.add_argument(
        "--dataset", required=True, action="append", metavar="NAME", help="a dataset name or alias, or auto"
    )
    cal.add_argument(
        "--data",
        required=True,
        action="append",
        metavar="FILE",
        help="dev questions with gold decompositions; repeat --dataset and --data to pool several dev sets",
    )
    source = cal.add_mutually_exclusive_group()
    source.add_argument("--corpus", action="append", default=None, metavar="FILE", help="corpus file(s) for BM25")
    source.add_argument("--index", default=None, metavar="DIR", help="retrieval index (default: BM25 over the data)")
    cal.add_argument("--limit", type=positive_int, default=None, help="first N questions")
    cal.add_argument(
        "--max-broken", type=float, default=0.05, help="share of correct nodes theta may break (default 0.05)"
    )
    cal.add_argument("--wrong", type=float, default=0.3, help="share of sub-answers made wrong (default 0.3)")
    cal.add_argument("--unsolved", type=float, default=0.2, help="share of nodes marked unsolved (default 0.2)")
    cal.add_argument("--seed", type=int, default=0)
    cal.add_argument("--model", default=None, help="the chat model of the llm reader, as for `searchain ask`")
    cal.add_argument("--llm-backend", default=None, choices=BACKENDS, help="as for ask")
    cal.add_argument("--out", default=None, metavar="FILE", help="also write the Markdown table here")
    cal.add_argument("--no-save", action="store_true", help="print the choice, do not save it")
    cal.add_argument(
        "--calibration-dir", default=None, metavar="DIR", help="save here (default $SEARCHAIN_CACHE/calibration)"
    )


def run_calibrate(args: argparse.Namespace) -> int:
    """``searchain calibrate``: sweep θ for a reader, print the table and the choice, save it."""
    from searchain_graph.evaluation.calibration import calibrate, dataset_retriever
    from searchain_graph.evaluation.dataset_loading import load_dataset
    from searchain_graph.ir.readers.calibration import save_threshold
    from searchain_graph.ir.readers.load import load_reader
    from searchain_graph.llms.chat_model import TransformersChatModel
    from searchain_graph.llms.loading import load_chat_model

    if len(args.dataset) != len(args.data):
        raise ValueError(f"give one --dataset per --data (got {len(args.dataset)} and {len(args.data)})")
    if len(args.data) > 1 and (args.index or args.corpus):
        raise ValueError("--index and --corpus serve one dataset; pooled dev sets are each searched over their own")
    parts = []
    for name, path in zip(args.dataset, args.data, strict=True):
        part = load_dataset(name, path)
        part_retriever = dataset_retriever(part, index=args.index, corpus=args.corpus)
        parts.append((part[: args.limit] if args.limit is not None else part, part_retriever))
    (examples, retriever), also = parts[0], parts[1:]
    llm = load_chat_model(args.model, max_new_tokens=48, backend=args.llm_backend)
    reader = load_reader(args.reader, llm)
    if args.reader.partition(":")[0] == "llm" and isinstance(llm, TransformersChatModel):
        llm.load()
    print(f"reading the oracle nodes of {len(examples)} question(s) with {args.reader} ...", file=sys.stderr)
    result = calibrate(
        examples,
        retriever,
        reader,
        max_broken=args.max_broken,
        wrong_fraction=args.wrong,
        unsolved_fraction=args.unsolved,
        seed=args.seed,
        source={"dataset": "+".join(args.dataset), "data": args.data, "limit": args.limit, "reader_spec": args.reader},
        also=also,
    )
    counts = result.counts
    text = (
        f"# Calibration of θ for `{args.reader}`\n\n"
        f"{sum(len(part) for part, _ in parts)} question(s) of {' + '.join(args.dataset)} "
        f"({', '.join(args.data)}): {counts['nodes']} nodes, "
        f"{counts['read']} read in {result.seconds:.0f} s.\n\n" + result.render(reader_name=args.reader)
    )
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
    bound = "" if result.qualified else f" (no θ breaks at most {100 * args.max_broken:g}% of correct nodes)"
    print(f"chosen: θ = {result.threshold:g} for {result.key}{bound}")
    if args.no_save:
        print("not saved (--no-save)")
    else:
        path = save_threshold(reader, result.threshold, details=result.record(), directory=args.calibration_dir)
        print(f"saved to {path}; create_searchain_graph uses it for {result.key} unless given a θ")
    return 0
