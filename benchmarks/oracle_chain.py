"""Oracle-chain benchmark: how often verification and completion repair or break a chain, per θ.

Chains come from gold decompositions (MuSiQue; Bamboogle with ``--index``/``--corpus``, as it
ships no paragraphs), with ``--wrong`` of the sub-answers replaced by wrong ones and
``--unsolved`` marked unsolved. Each node is retrieved (BM25 over the dataset's paragraphs,
or ``--index``) and read once per reader; the outcome at every θ follows from *f*, and the
calibration rule marks the θ it would choose. See :mod:`searchain_graph.evaluation.oracle` and
:mod:`searchain_graph.evaluation.calibration` (``searchain calibrate`` runs the same code for one
reader and saves its choice).

    python benchmarks/oracle_chain.py --data ../shared/data/musique/musique_ans_dev.sample100.jsonl \\
        --reader llm --out docs/results/oracle_chain.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

from searchain_graph.evaluation.calibration import DEFAULT_MAX_BROKEN, calibrate, dataset_retriever
from searchain_graph.evaluation.dataset_loading import load_dataset
from searchain_graph.ir.readers.load import load_reader
from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.loading import load_chat_model


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
    parser.add_argument("--thresholds", default=None, help="θ to sweep, comma-separated (default: from the f seen)")
    parser.add_argument("--max-broken", type=float, default=DEFAULT_MAX_BROKEN, help="bound of the calibration rule")
    parser.add_argument("--out", default=None, help="also write the Markdown here")
    args = parser.parse_args()

    examples = load_dataset(args.dataset, args.data)
    retriever = dataset_retriever(examples, index=args.index, corpus=args.corpus)
    examples = examples[: args.limit] if args.limit else examples
    thresholds = [float(t) for t in args.thresholds.split(",")] if args.thresholds else None
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
        + (f" --thresholds {args.thresholds}" if args.thresholds else "")
        + (f" --max-broken {args.max_broken:g}" if args.max_broken != DEFAULT_MAX_BROKEN else "")
        + "`",
        "",
        f"{len(examples)} questions of {args.dataset}; LLM for the llm reader: "
        f"{getattr(llm, 'model_name', None) or type(llm).__name__}.",
        "",
    ]
    for spec in args.reader or ["llm"]:
        result = calibrate(
            examples,
            retriever,
            load_reader(spec, llm),
            max_broken=args.max_broken,
            wrong_fraction=args.wrong,
            unsolved_fraction=args.unsolved,
            seed=args.seed,
            thresholds=thresholds,
        )
        sections += [f"## Reader `{spec}` ({result.seconds:.0f} s for {len(result.nodes)} nodes)", ""]
        sections.append(result.render(reader_name=spec))
    text = "\n".join(sections)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
