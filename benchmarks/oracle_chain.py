"""Oracle-chain benchmark: how often verification and completion repair or break a chain, per θ.

Chains come from gold decompositions (MuSiQue; Bamboogle with ``--index``/``--corpus``, as it
ships no paragraphs), with ``--wrong`` of the sub-answers replaced by wrong ones and
``--unsolved`` marked unsolved. Each node is retrieved (BM25 over the dataset's paragraphs,
or ``--index``) and read once per reader; the outcome at every θ follows from *f*. See
:mod:`searchain_graph.evaluation.oracle`.

    python benchmarks/oracle_chain.py --data ../shared/data/musique/musique_ans_dev.sample100.jsonl \\
        --reader llm --out docs/results/oracle_chain.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from searchain_graph.evaluation.datasets import corpus_paragraphs, load_dataset
from searchain_graph.evaluation.oracle import (
    DEFAULT_THRESHOLDS,
    build_oracle_nodes,
    read_oracle_nodes,
    render_sweep,
    sweep,
)
from searchain_graph.ir.bm25_retriever import BM25Retriever
from searchain_graph.ir.index import load_index
from searchain_graph.ir.readers.load import load_reader
from searchain_graph.llms.chat_model import TransformersChatModel, load_chat_model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="musique")
    parser.add_argument("--data", required=True, help="dataset file with gold decompositions")
    parser.add_argument("--limit", type=int, default=None, help="first N questions")
    parser.add_argument("--index", default=None, help="retrieval index (default: BM25 over the dataset's paragraphs)")
    parser.add_argument("--corpus", action="append", default=None, help="corpus files for BM25 instead")
    parser.add_argument("--reader", action="append", default=None, help="reader spec(s): llm, dpr[:M], extractive[:M]")
    parser.add_argument("--model", default=None, help="chat model for the llm reader (default: as `searchain ask`)")
    parser.add_argument("--wrong", type=float, default=0.3, help="fraction of sub-answers replaced by wrong ones")
    parser.add_argument("--unsolved", type=float, default=0.2, help="fraction of nodes marked unsolved")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--thresholds", default=",".join(f"{t:g}" for t in DEFAULT_THRESHOLDS))
    parser.add_argument("--out", default=None, help="also write the Markdown here")
    args = parser.parse_args()

    examples = load_dataset(args.dataset, args.data)
    if args.index:
        retriever = load_index(args.index, k=1)
    elif args.corpus:
        retriever = BM25Retriever.from_files(args.corpus, k=1)
    else:
        retriever = BM25Retriever.from_documents(corpus_paragraphs(examples), k=1)
    examples = examples[: args.limit] if args.limit else examples
    thresholds = [float(t) for t in args.thresholds.split(",")]
    llm = load_chat_model(args.model, max_new_tokens=48)
    if isinstance(llm, TransformersChatModel):
        llm.load()
    sections = [
        "# Oracle-chain benchmark",
        "",
        f"`python benchmarks/oracle_chain.py --dataset {args.dataset} --data {args.data}"
        + (f" --limit {args.limit}" if args.limit else "")
        + f" --wrong {args.wrong} --unsolved {args.unsolved} --seed {args.seed}"
        + "".join(f" --reader {r}" for r in args.reader or ["llm"])
        + "`",
        "",
        f"{len(examples)} questions of {args.dataset}; LLM for the llm reader: "
        f"{getattr(llm, 'model_name', None) or type(llm).__name__}.",
        "",
    ]
    for spec in args.reader or ["llm"]:
        nodes = build_oracle_nodes(examples, wrong_fraction=args.wrong, unsolved_fraction=args.unsolved, seed=args.seed)
        start = time.perf_counter()
        read_oracle_nodes(nodes, retriever, load_reader(spec, llm))
        seconds = time.perf_counter() - start
        sections += [f"## Reader `{spec}` ({seconds:.0f} s for {len(nodes)} nodes)", ""]
        sections.append(render_sweep(sweep(nodes, thresholds), nodes, reader_name=spec))
    text = "\n".join(sections)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
