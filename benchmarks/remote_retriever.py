"""``RemoteRetriever`` against ``searchain serve-index``: queries/s and latency, a client per query vs one reused.

A BM25 index of the 1,999 shipped HotpotQA paragraphs is built in a temporary directory and
served by ``searchain serve-index`` (a subprocess on a free 127.0.0.1 port). The shipped HotpotQA
questions and their first halves are then sent, k=3, by

* old: the ``RemoteRetriever`` of commit ``f07496b`` (``git show``; the code before the connection pool),
  which opens a new HTTP client (and connection) for every query; where git cannot give it, a
  new retriever per query, closed after it, stands in (``--old fresh``);
* new: the current ``RemoteRetriever``, one client reused over all queries;

at concurrency 1 and 16: sync ``invoke`` from 1 or 16 threads, async ``ainvoke`` from 1 or 16
tasks under ``asyncio.gather``, each sending its share one query after the other. Each cell
prints queries/s and the p50/p95 latency of one query, old and new in the same run, and checks
that both return the same passages. Target: new >= 5x old queries/s at concurrency 16.

The machine is shared with a background training job (``training/train_reader.py``): its
processes are stopped (SIGSTOP) for the timed part and continued (SIGCONT) right after, also on
an error or Ctrl-C (``--no-pause`` leaves them alone).

    python benchmarks/remote_retriever.py                 # 400 queries per cell
    python benchmarks/remote_retriever.py --queries 1000 --json remote.json
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

from searchain_graph.ir.index import build_index
from searchain_graph.ir.remote import RemoteRetriever

ROOT = Path(__file__).resolve().parents[1]
PARAGRAPHS = ROOT / "examples/data/hotpotqa_dev200_paragraphs.jsonl"
QUESTIONS = ROOT / "examples/data/hotpotqa_dev20_questions.jsonl"
OLD_COMMIT = "f07496b"
"""The last commit whose ``RemoteRetriever`` opened a client per query."""
K = 3


def queries() -> list[str]:
    """The shipped HotpotQA questions, plus their first halves (short, sub-question-like queries)."""
    full = [json.loads(line)["question_text"] for line in QUESTIONS.read_text(encoding="utf-8").splitlines()]
    return full + [" ".join(q.split()[: max(3, len(q.split()) // 2)]) for q in full]


def training_pids() -> list[int]:
    """The processes of the background training: Python running ``train_reader.py`` (never this one)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")
        except OSError:
            continue
        if argv and Path(argv[0]).name.startswith("python") and any(a.endswith("train_reader.py") for a in argv):
            pids.append(int(entry.name))
    return sorted(pids)


@contextlib.contextmanager
def training_paused(enabled: bool) -> Iterator[list[int]]:
    """Stop the training processes for the ``with`` block; continue them after it, whatever happens."""
    pids = training_pids() if enabled else []
    stopped = []
    previous = signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so that `finally` runs on kill
    try:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP)
                stopped.append(pid)
        yield stopped
    finally:
        for pid in stopped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        signal.signal(signal.SIGTERM, previous)


def old_retriever_class(mode: str) -> tuple[str, Callable[..., BaseRetriever] | None]:
    """The old ``RemoteRetriever`` class from git (``git``), or ``None`` for the stand-in (``fresh``)."""
    if mode == "git":
        try:
            source = subprocess.run(
                ["git", "show", f"{OLD_COMMIT}:src/searchain_graph/ir/remote.py"],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as error:
            print(f"git show {OLD_COMMIT} failed ({error}); the old behaviour is a new retriever per query")
        else:
            path = Path(tempfile.mkdtemp()) / "remote_old.py"
            path.write_text(source, encoding="utf-8")
            spec = importlib.util.spec_from_file_location("remote_old", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            path.unlink()
            path.parent.rmdir()
            return f"RemoteRetriever of {OLD_COMMIT} (a client per query)", module.RemoteRetriever
    return "a new RemoteRetriever per query, closed after it", None


class Fresh(BaseRetriever):
    """The old behaviour with the current code: a new retriever (so a new client) for every query."""

    url: str
    k: int = K

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        with RemoteRetriever(url=self.url, k=self.k) as retriever:
            return retriever.invoke(query)

    async def _aget_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        async with RemoteRetriever(url=self.url, k=self.k) as retriever:
            return await retriever.ainvoke(query)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def run_sync(retriever: BaseRetriever, work: list[str], concurrency: int) -> tuple[float, list[float], list[Any]]:
    """Seconds for all of ``work`` from ``concurrency`` threads, each query's ms, and the results in order."""
    latencies: list[float] = [0.0] * len(work)
    results: list[Any] = [None] * len(work)

    def worker(offset: int) -> None:
        for n in range(offset, len(work), concurrency):
            start = time.perf_counter()
            results[n] = retriever.invoke(work[n])
            latencies[n] = (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(worker, range(concurrency)))
    return time.perf_counter() - start, latencies, results


def run_async(retriever: BaseRetriever, work: list[str], concurrency: int) -> tuple[float, list[float], list[Any]]:
    """:func:`run_sync` with ``concurrency`` tasks in one event loop (``asyncio.gather``)."""
    latencies: list[float] = [0.0] * len(work)
    results: list[Any] = [None] * len(work)

    async def worker(offset: int) -> None:
        for n in range(offset, len(work), concurrency):
            start = time.perf_counter()
            results[n] = await retriever.ainvoke(work[n])
            latencies[n] = (time.perf_counter() - start) * 1000

    async def main() -> float:
        await retriever.ainvoke(work[0])  # opens the loop's client (new) as a warm-up
        start = time.perf_counter()
        await asyncio.gather(*(worker(offset) for offset in range(concurrency)))
        return time.perf_counter() - start

    return asyncio.run(main()), latencies, results


def plain(results: list[list[Document]]) -> list[list[tuple[str, str]]]:
    return [[(d.page_content, str(d.metadata.get("id"))) for d in docs] for docs in results]


@contextlib.contextmanager
def serve_index(directory: Path) -> Iterator[str]:
    """``searchain serve-index DIR`` on a free 127.0.0.1 port until the block ends; yields its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "searchain_graph", "serve-index", str(directory), "--port", str(port), "--quiet"]
    server = subprocess.Popen(command, cwd=ROOT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                httpx.get(url + "healthz").raise_for_status()
                break
            except httpx.TransportError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("searchain serve-index did not start") from None
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=400, help="queries per cell (default 400)")
    parser.add_argument("--old", choices=["git", "fresh"], default="git", help="how the old behaviour is run")
    parser.add_argument("--no-pause", action="store_true", help="leave the background training running")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    old_name, old_class = old_retriever_class(args.old)
    pool = queries()
    work = [pool[n % len(pool)] for n in range(args.queries)]
    with tempfile.TemporaryDirectory() as tmp:
        summary = build_index(PARAGRAPHS, Path(tmp) / "index", workers=1)
        print(f"index: {summary}")
        with serve_index(Path(tmp) / "index") as url:
            old: BaseRetriever = old_class(url=url, k=K) if old_class else Fresh(url=url, k=K)
            new = RemoteRetriever(url=url, k=K)
            print(f"old: {old_name}\nnew: RemoteRetriever, one client reused")
            print(f"server: {url}, {args.queries} queries per cell")
            rows: list[dict[str, Any]] = []
            with training_paused(not args.no_pause) as stopped, new:
                print(f"training processes stopped for the timed part: {stopped or 'none'}")
                for api, run in (("sync invoke", run_sync), ("async ainvoke", run_async)):
                    for concurrency in (1, 16):
                        seen = {}
                        for name, retriever in (("old", old), ("new", new)):
                            retriever.invoke(work[0])  # warm-up: the new one opens its sync client
                            seconds, latencies, results = run(retriever, work, concurrency)
                            seen[name] = plain(results)
                            row: dict[str, Any] = {"api": api, "concurrency": concurrency, "client": name}
                            row |= {"qps": len(work) / seconds, "p50_ms": percentile(latencies, 0.5)}
                            row["p95_ms"] = percentile(latencies, 0.95)
                            rows.append(row)
                        assert seen["old"] == seen["new"], f"{api} at {concurrency}: old and new passages differ"
            print(f"training processes continued: {stopped or 'none'}\n")
    print(f"{'api':<14} {'conc':>4} {'client':<6} {'queries/s':>10} {'p50 ms':>8} {'p95 ms':>8} {'new/old':>8}")
    for row in rows:
        ratio = ""
        if row["client"] == "new":
            same = [r for r in rows if (r["api"], r["concurrency"]) == (row["api"], row["concurrency"])]
            before = next(r for r in same if r["client"] == "old")
            ratio = f"{row['qps'] / before['qps']:.1f}x"
            row["speedup"] = row["qps"] / before["qps"]
        print(
            f"{row['api']:<14} {row['concurrency']:>4} {row['client']:<6} {row['qps']:>10.0f} "
            f"{row['p50_ms']:>8.2f} {row['p95_ms']:>8.2f} {ratio:>8}"
        )
    at16 = [row["speedup"] for row in rows if row["client"] == "new" and row["concurrency"] == 16]
    verdict = "met" if min(at16) >= 5 else "NOT met"
    print(f"\ntarget new >= 5x old queries/s at concurrency 16: {verdict} ({', '.join(f'{s:.1f}x' for s in at16)})")
    if args.json:
        args.json.write_text(json.dumps({"old": old_name, "queries": args.queries, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
