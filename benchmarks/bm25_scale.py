"""BM25 at millions of passages: build rate, peak memory, disk, query latency, beside tantivy.

For each size, a corpus is synthesised to a JSONL file as in ``benchmarks/retrieval.py`` (the
1,999 shipped HotpotQA paragraphs repeated, each copy with 10% of its words replaced), then:

* ``searchain index`` builds it (a separate process; its peak memory is the largest resident
  set of the process tree, sampled every 0.5 s from ``/proc``, plus the kernel's ``ru_maxrss``
  of the largest process);
* ``searchain index --retriever tantivy`` (the tantivy backend, ``pip install
  'searchain-graph[tantivy]'``: Rust, Lucene-like) indexes the same passages (title and text in one
  field, its ``en_stem`` tokenizer; the same passage store) with one thread per core;
* both answer the same queries (the shipped HotpotQA questions and their first halves,
  reduced to their words for tantivy's query parser), top 10, with BM25 at k1 = 1.2, b = 0.75
  (tantivy's fixed parameters; ``searchain index --bm25-k1 1.2``): p50/p95 latency, and the
  overlap of the two top-10 lists.

    python benchmarks/bm25_scale.py --sizes 1000000 5000000 --workdir /tmp/bm25-scale

Targets, at 5M passages: build >= 15k passages/s, peak RSS <= 4 GB, query p50 <= 10 ms.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import numpy as np  # noqa: E402
from retrieval import iter_synthetic, percentile, queries  # noqa: E402

from searchain_graph.ir.bm25.index import BM25Index, retain_freed_memory  # noqa: E402
from searchain_graph.ir.index import load_index  # noqa: E402
from searchain_graph.ir.tantivy_index import TantivyRetriever  # noqa: E402


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and its descendants (Linux ``/proc``)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
            pid = int(stat.parent.name)
            parents[pid], rss[pid] = int(fields[1]), int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in tree]
        tree.update(children)
        frontier.extend(children)
    return sum(rss.get(pid, 0) for pid in tree)


def measured(command: list[str]) -> tuple[float, int, int]:
    """Run ``command``: ``(seconds, peak resident bytes of its process tree, ru_maxrss of the largest process)``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    started = time.perf_counter()
    proc = subprocess.Popen(command)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _tree_rss(proc.pid))
        time.sleep(0.5)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{command[:4]} failed with exit status {proc.returncode}")
    largest = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) * 1024
    return seconds, peak, largest


def disk(path: Path) -> int:
    """Bytes of a file, or of every file under a directory."""
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def write_corpus(n: int, path: Path) -> None:
    if path.is_file() and sum(1 for _ in path.open("rb")) == n:
        return
    tmp = path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for doc in iter_synthetic(n):
            handle.write(json.dumps({**doc.metadata, "text": doc.page_content}, ensure_ascii=False) + "\n")
    tmp.replace(path)


def exhaustive_row(index: BM25Index, qs: list[str], repeats: int, size: int) -> dict[str, object]:
    """The same queries without MaxScore: latency, and how many top-10 lists equal the pruned ones.

    Two lists are equal when their scores agree (relative 1e-5) and their passages agree
    outside ties with the 10th score (near-copies tie; either may be cut).
    """
    exhaustive = copy.copy(index)
    exhaustive.max_scores = None
    latencies, same = [], 0
    for n in range(repeats):
        for q in qs:
            t0 = time.perf_counter()
            ids, scores = exhaustive.search(q, 10)
            latencies.append(time.perf_counter() - t0)
            if n == 0:
                pruned_ids, pruned_scores = index.search(q, 10)
                tied = np.isclose(scores, scores[-1], rtol=1e-5) if len(scores) else np.zeros(0, bool)
                same += bool(
                    len(ids) == len(pruned_ids)
                    and np.allclose(scores, pruned_scores, rtol=1e-5)
                    and (ids[~tied] == pruned_ids[~tied]).all()
                )
    return {
        "engine": "searchain, exhaustive",
        "passages": size,
        "query_p50_ms": round(1000 * statistics.median(latencies), 2),
        "query_p95_ms": round(1000 * percentile(latencies, 95), 2),
        "same_top10_as_maxscore": f"{same}/{len(qs)}",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/bm25-scale"))
    parser.add_argument("--engines", nargs="+", default=["searchain", "tantivy"])
    parser.add_argument("--repeats", type=int, default=5, help="timed passes over the queries")
    parser.add_argument("--warmup", type=int, default=1, help="untimed passes first (the page cache)")
    parser.add_argument("--keep", action="store_true", help="keep corpora and indexes")
    parser.add_argument("--queries-only", action="store_true", help="time the queries on indexes kept by --keep")
    parser.add_argument(
        "--exhaustive", action="store_true", help="also time the built-in engine without pruning, and compare the lists"
    )
    parser.add_argument(
        "--retain-freed-memory",
        action="store_true",
        help="time the queries with glibc keeping freed memory, as `searchain serve-index` does",
    )
    args = parser.parse_args()
    if args.retain_freed_memory and not retain_freed_memory():
        raise SystemExit("--retain-freed-memory: this C library is not glibc")
    args.workdir.mkdir(parents=True, exist_ok=True)
    qs = queries()
    rows = []
    for size in args.sizes:
        corpus = args.workdir / f"corpus-{size}.jsonl"
        started = time.perf_counter()
        if not args.queries_only:
            write_corpus(size, corpus)
            print(f"# {size:,} passages: corpus {disk(corpus) / 2**30:.2f} GiB ({time.perf_counter() - started:.0f} s)")
        tops: dict[str, list[list[int]]] = {}
        for engine in args.engines:
            out = args.workdir / f"{engine}-{size}"
            command = [sys.executable, "-m", "searchain_graph", "index", str(corpus), "--out", str(out)]
            command += ["--bm25-k1", "1.2", "--quiet"] + (["--retriever", "tantivy"] if engine == "tantivy" else [])
            seconds, peak, largest = (float("nan"), 0, 0) if args.queries_only else measured(command)
            latencies: list[float] = []
            top: list[list[int]] = []
            if engine == "searchain":
                retriever = load_index(out, k=10)
                index = retriever._index  # the engine: row ids, as tantivy gives
                assert index is not None
                for n in range(-args.warmup, args.repeats):
                    for q in qs:
                        t0 = time.perf_counter()
                        ids, _ = index.search(q, 10)
                        if n >= 0:
                            latencies.append(time.perf_counter() - t0)
                        if n == 0:
                            top.append(ids.tolist())
            else:
                tantivy = load_index(out, k=10)
                assert isinstance(tantivy, TantivyRetriever)
                for n in range(-args.warmup, args.repeats):
                    for q in qs:
                        t0 = time.perf_counter()
                        hits = tantivy.search(q, 10)
                        if n >= 0:
                            latencies.append(time.perf_counter() - t0)
                        if n == 0:
                            top.append([pid for pid, _ in hits])
            tops[engine] = top
            row = {
                "engine": engine,
                "passages": size,
                "build_s": None if args.queries_only else round(seconds, 1),
                "passages_per_s": None if args.queries_only else round(size / seconds),
                "peak_rss_tree_gib": round(peak / 2**30, 2),
                "max_rss_largest_gib": round(largest / 2**30, 2),
                "disk_gib": round(disk(out) / 2**30, 3),
                "query_p50_ms": round(1000 * statistics.median(latencies), 2),
                "query_p95_ms": round(1000 * percentile(latencies, 95), 2),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
            if engine == "searchain" and args.exhaustive:
                print(json.dumps(exhaustive_row(index, qs, args.repeats, size)), flush=True)
            if not args.keep:
                shutil.rmtree(out, ignore_errors=True)
        if len(tops) == 2:
            a, b = tops.values()
            shared = [len(set(x) & set(y)) / max(1, min(10, len(x), len(y))) for x, y in zip(a, b, strict=True)]
            overlap = statistics.fmean(shared)
            print(json.dumps({"passages": size, "top10_overlap": round(overlap, 3), "queries": len(qs)}), flush=True)
        if not args.keep:
            corpus.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
