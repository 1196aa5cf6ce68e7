"""The paper's setup: its method as written (``preset="paper"``), ColBERTv2, the DPR reader, θ = 1.5.

SearChain (Xu et al., WWW 2024, Section 4.1) retrieves the top-1 passage with ColBERTv2 and
reads it with DPR's reader (``facebook/dpr-reader-multiset-base`` in the authors' code);
IR corrects the LLM only when the reader's relevance logit exceeds θ = 1.5. The paper's
LLM is gpt-3.5-turbo. With Hugging Face hub access and an OpenAI key this is one command:

    pip install 'searchain-graph[colbert]'
    export OPENAI_API_KEY=...
    python examples/paper_setup.py --corpus examples/data/hotpotqa_dev200_paragraphs.jsonl

The ColBERT index is built on the first run (``--index``, default
``~/.cache/searchain-graph/paper-colbert``) and reused afterwards. Without the hub, download
``colbert-ir/colbertv2.0`` and ``facebook/dpr-reader-multiset-base`` elsewhere and pass their
directories with ``--colbert-checkpoint`` and ``--reader-model``; ``--model`` picks another LLM
(``smollm2`` runs offline). ``tests/integration_tests/test_paper_setup.py`` runs this script
end to end with tiny local checkpoints.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from searchain_graph import Context, DPRReader, ModelNotFoundError, create_searchain_graph, load_chat_model
from searchain_graph.ir.index import build_index, load_index
from searchain_graph.ir.index_dir import read_manifest

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "examples/data/hotpotqa_dev20_questions.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", default=None, help="corpus file(s) to index (first run)")
    parser.add_argument("--index", default=str(Path.home() / ".cache/searchain-graph/paper-colbert"))
    parser.add_argument("--colbert-checkpoint", default="colbert-ir/colbertv2.0")
    parser.add_argument("--reader-model", default="facebook/dpr-reader-multiset-base")
    parser.add_argument("--model", default="openai:gpt-3.5-turbo", help="the LLM (see `searchain ask --help`)")
    parser.add_argument("--questions", type=int, default=3, help="how many shipped HotpotQA questions to ask")
    parser.add_argument("--question", default=None, help="ask this question instead")
    parser.add_argument("--max-new-tokens", type=int, default=256, help="generation budget of local models")
    args = parser.parse_args(argv)

    try:
        index = Path(args.index).expanduser()
        if not (index / "searchain_index.json").is_file():
            corpus = args.corpus or [str(ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl")]
            summary = build_index(corpus, index, retriever="colbert", checkpoint=args.colbert_checkpoint)
            print(f"built a ColBERT index of {summary.passages} passages in {summary.seconds:.0f} s", file=sys.stderr)
        manifest = read_manifest(index)
        if manifest["retriever"] != "colbert":
            raise ValueError(f"{index} is a {manifest['retriever']} index; the paper's setup needs a ColBERT one")
        retriever = load_index(index, k=1)
        reader = DPRReader(args.reader_model).load()
        llm = load_chat_model(args.model, max_new_tokens=args.max_new_tokens)
    except (ModelNotFoundError, ImportError, ValueError, FileNotFoundError) as exc:
        print(f"paper_setup: {exc}", file=sys.stderr)
        return 2

    paper = Context(preset="paper", confidence_threshold=1.5, max_rounds=5)
    graph = create_searchain_graph(llm, retriever, reader, paper)
    if args.question:
        questions = [(args.question, [])]
    else:
        rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines()[: args.questions]]
        questions = [(r["question_text"], r["answers_objects"][0]["spans"]) for r in rows]
    for question, gold in questions:
        out = graph.invoke({"question": question})
        print(f"Q: {question}\nA: {out['answer']}" + (f"   (gold: {'; '.join(gold)})" if gold else ""))
        for ref in out["references"]:
            print(f"  [{ref['index']}] {ref['query']} -> {ref['answer']} ({ref['source']}, f={ref['confidence']})")
        print(f"  {out['rounds']} round(s), {out['usage']['llm_calls']} LLM calls\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
