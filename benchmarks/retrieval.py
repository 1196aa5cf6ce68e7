"""Index build throughput, on-disk size, load time and query latency of the retrievers.

Corpora of 10k and 100k passages are synthesised from the 1,999 shipped HotpotQA paragraphs
by repeating them and perturbing each copy (10% of its words replaced by words drawn from
the corpus vocabulary, and a copy number added to the title), so that vocabulary and length
statistics stay those of Wikipedia paragraphs while no two passages are identical. Queries
are the shipped HotpotQA questions plus their sub-question-like prefixes.

    python benchmarks/retrieval.py                       # BM25 at 10k and 100k passages
    python benchmarks/retrieval.py --sizes 2000 --retrievers colbert --colbert-checkpoint DIR

Prints two build figures: the BM25 engine alone (``BM25Index.build`` over texts in memory) and
the whole ``build_index`` pipeline that ``searchain index`` runs (reading and parsing the JSONL,
writing the passage store, indexing, saving). Targets: BM25 build >= 20k passages/s,
BM25 query p50 <= 5 ms at 100k passages.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from langchain_core.documents import Document

from searchain_graph.ir.bm25.index import BM25Index
from searchain_graph.ir.corpus import load_corpus, passage_text
from searchain_graph.ir.index import build_index, load_index

ROOT = Path(__file__).resolve().parents[1]
PARAGRAPHS = ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl"
QUESTIONS = ROOT / "examples/data/hotpotqa_dev20_questions.jsonl"


def synthesise(n: int, *, seed: int = 0) -> list[Document]:
    """``n`` passages: the real paragraphs repeated, each copy perturbed (see the module docstring)."""
    return list(iter_synthetic(n, seed=seed))


def iter_synthetic(n: int, *, seed: int = 0) -> Iterator[Document]:
    """:func:`synthesise`, one passage at a time (for corpora of millions)."""
    base = load_corpus(PARAGRAPHS)
    rng = random.Random(seed)
    vocab = sorted({w for d in base for w in d.page_content.split()})
    for i in range(n):
        doc = base[i % len(base)]
        copy = i // len(base)
        words = doc.page_content.split()
        if copy:
            for _ in range(max(1, len(words) // 10)):
                words[rng.randrange(len(words))] = rng.choice(vocab)
        title = doc.metadata["title"] + (f" ({copy})" if copy else "")
        yield Document(page_content=" ".join(words), metadata={"id": str(i), "title": title})


def queries() -> list[str]:
    """The shipped HotpotQA questions, plus their first halves (short, sub-question-like queries)."""
    full = [json.loads(line)["question_text"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    halves = [" ".join(q.split()[: max(3, len(q.split()) // 2)]) for q in full]
    return full + halves


def write_jsonl(docs: list[Document], path: Path) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for doc in docs:
            handle.write(json.dumps({**doc.metadata, "text": doc.page_content}, ensure_ascii=False) + "\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000", help="corpus sizes, comma-separated")
    parser.add_argument("--retrievers", default="bm25", help="bm25 and/or colbert, comma-separated")
    parser.add_argument("--colbert-checkpoint", default=None, help="ColBERT checkpoint (local dir or hub name)")
    parser.add_argument("--workers", type=int, default=None, help="BM25 tokenising processes (default: per core)")
    parser.add_argument("--repeats", type=int, default=5, help="passes over the query set")
    parser.add_argument("--build-repeats", type=int, default=3, help="BM25 engine builds per size (median)")
    args = parser.parse_args()

    qs = queries()
    rows = []
    engine_rows: list[tuple[int, float]] = []
    with tempfile.TemporaryDirectory(prefix="searchain-bench-") as tmp:
        for size in (int(s) for s in args.sizes.split(",")):
            corpus = Path(tmp) / f"corpus{size}.jsonl"
            docs = synthesise(size)
            write_jsonl(docs, corpus)
            if "bm25" in args.retrievers.split(","):
                texts = [passage_text(d) for d in docs]
                engine_s = (
                    statistics.median(
                        timed(lambda t=texts: BM25Index.build(t, workers=args.workers), args.build_repeats)
                    )
                    / 1000
                )
                print(
                    json.dumps(
                        {
                            "bm25 engine build (texts in memory)": size,
                            "s": round(engine_s, 3),
                            "passages_per_s": round(size / engine_s),
                        }
                    )
                )
                engine_rows.append((size, engine_s))
            for kind in args.retrievers.split(","):
                out = Path(tmp) / f"{kind}{size}"
                summary = build_index(
                    corpus, out, retriever=kind, checkpoint=args.colbert_checkpoint, workers=args.workers
                )  # type: ignore[arg-type]
                start = time.perf_counter()
                retriever = load_index(out, k=1)
                load_ms = (time.perf_counter() - start) * 1000
                retriever.invoke(qs[0])  # warm-up (page-in, lazy model load)
                latencies: list[float] = []
                for _ in range(args.repeats):
                    for q in qs:
                        latencies += timed(lambda q=q, r=retriever: r.invoke(q), 1)
                engine = getattr(retriever, "_index", None)
                raw = (
                    [t for q in qs for t in timed(lambda q=q, e=engine: e.search(q, 1), args.repeats)]
                    if engine is not None and hasattr(engine, "search")
                    else []
                )
                rows.append(
                    {
                        "retriever": kind,
                        "passages": size,
                        "build_s": summary.seconds,
                        "build_pps": summary.passages_per_second,
                        "size_mib": summary.size_bytes / 2**20,
                        "load_ms": load_ms,
                        "p50_ms": statistics.median(latencies),
                        "p95_ms": percentile(latencies, 0.95),
                        "engine_p50_ms": statistics.median(raw) if raw else float("nan"),
                        "engine_p95_ms": percentile(raw, 0.95) if raw else float("nan"),
                        "queries": len(latencies),
                    }
                )
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}))

    print()
    print(
        "| retriever | passages | build (s) | passages/s | on disk (MiB) | load (ms) | query p50 (ms) | p95 (ms) "
        "| engine p50 / p95 (ms) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['retriever']} | {r['passages']:,} | {r['build_s']:.2f} | {r['build_pps']:,.0f} | "
            f"{r['size_mib']:.1f} | {r['load_ms']:.1f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
            f"{r['engine_p50_ms']:.2f} / {r['engine_p95_ms']:.2f} |"
        )
    if engine_rows:
        print("\n| BM25 engine build, texts in memory (median) | passages | s | passages/s |\n|---|---:|---:|---:|")
        for size, seconds in engine_rows:
            print(f"| `BM25Index.build` | {size:,} | {seconds:.2f} | {size / seconds:,.0f} |")
    print(
        "\nbuild is the whole `searchain index` pipeline (read and parse JSONL, store passages, index); "
        "query latency is per retriever.invoke(question) (LangChain run manager included), top-1; "
        "engine is the bare search. Targets: BM25 build >= 20,000 passages/s; BM25 p50 <= 5 ms at 100k."
    )


if __name__ == "__main__":
    main()
