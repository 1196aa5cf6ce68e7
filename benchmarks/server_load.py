"""Both HTTP servers under load on loopback, their answers checked against unloaded ones.

* ``searchain serve-index``: BM25 over the shipped HotpotQA paragraphs (1,999 passages), served by
  the CLI; ``--queries`` searches (``k=10``) sent ``--concurrency`` at once; every reply compared
  with the library's own ``load_index(DIR).invoke(query, k=10)`` (ids in order, scores to 1e-4).
* ``searchain serve``: the CLI with a rule-based LLM taking 30 ms a call
  (``--model import:tests.fakes:slow_serve_llm``), the LLM reader, BM25 over the demo corpus,
  ``--max-concurrent`` runs at once; ``--questions`` questions each run alone first, then
  ``--bursts`` bursts of ``--burst`` runs posted at once, each followed over its event stream to
  the end; every burst run's output compared with its question's lone run (usage aside).

Each server prints: requests, errors (a non-2xx reply, a failed run, or an answer that differs),
p50/p95 latency (a search; a run from its ``POST`` to its ``done`` event) and throughput. Both
servers are stopped with SIGTERM at the end; the time they took to exit is printed too.

    python benchmarks/server_load.py --queries 2000 --concurrency 64 --bursts 4 --burst 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from searchain_graph import BM25Retriever, load_corpus, load_index

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _start(args: list[str], port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    command = [sys.executable, "-m", "searchain_graph", *args, "--port", str(port), "--quiet"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return process
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise SystemExit(f"{args[0]} did not start")
        time.sleep(0.1)


def _stop(process: subprocess.Popen[bytes]) -> float:
    started = time.monotonic()
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    return time.monotonic() - started


def _figures(name: str, latencies: list[float], errors: int, seconds: float, unit: str) -> None:
    ordered = sorted(latencies) or [0.0]
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    print(
        f"{name}: {len(latencies)} {unit}, {errors} errors, p50 {statistics.median(ordered) * 1000:.1f} ms, "
        f"p95 {p95 * 1000:.1f} ms, {len(latencies) / seconds:.1f} {unit}/s ({seconds:.1f} s)"
    )


def _queries(n: int) -> list[str]:
    passages = load_corpus(DATA / "hotpotqa_dev200_paragraphs.jsonl")
    with (DATA / "hotpotqa_dev20_questions.jsonl").open(encoding="utf-8") as handle:
        questions = [json.loads(line)["question_text"] for line in handle]
    titles = [f"{doc.metadata['title']} {' '.join(doc.page_content.split()[:6])}" for doc in passages]
    pool = questions + titles
    return [pool[i % len(pool)] for i in range(n)]


async def _search_load(base: str, queries: list[str], concurrency: int) -> tuple[list[Any], list[float], float]:
    gate = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base, timeout=60, limits=limits) as client:

        async def one(query: str) -> tuple[Any, float]:
            async with gate:
                started = time.perf_counter()
                try:
                    reply = await client.get("/", params={"query": query, "k": 10})
                    body = reply.json() if reply.status_code == 200 else None
                except httpx.HTTPError:
                    body = None
                return body, time.perf_counter() - started

        started = time.perf_counter()
        results = await asyncio.gather(*(one(q) for q in queries))
        seconds = time.perf_counter() - started
    return [body for body, _ in results], [latency for _, latency in results], seconds


def bench_index(queries: int, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "idx"
        BM25Retriever.from_documents(load_corpus(DATA / "hotpotqa_dev200_paragraphs.jsonl"), k=10).save(directory)
        local = load_index(directory)
        texts = _queries(queries)
        port = _port()
        process = _start(["serve-index", str(directory)], port)
        try:
            bodies, latencies, seconds = asyncio.run(_search_load(f"http://127.0.0.1:{port}", texts, concurrency))
        finally:
            stopped = _stop(process)
    errors = 0
    for text, body in zip(texts, bodies, strict=True):
        want = local.invoke(text, k=10)
        if body is None or [hit.get("id") for hit in body["topk"]] != [d.metadata.get("id") for d in want]:
            errors += 1
        elif any(abs(hit["score"] - d.metadata["score"]) > 1e-4 for hit, d in zip(body["topk"], want, strict=True)):
            errors += 1
    _figures(f"serve-index ({concurrency} at once)", latencies, errors, seconds, "searches")
    print(f"serve-index: stopped {stopped:.2f} s after SIGTERM")


async def _run(client: httpx.AsyncClient, question: str) -> tuple[dict[str, Any] | None, float, int]:
    """One run: its output (None when it failed or was refused), seconds from POST to its end, HTTP status."""
    started = time.perf_counter()
    reply = await client.post("/runs", json={"question": question})
    if reply.status_code != 202:
        return None, time.perf_counter() - started, reply.status_code
    run = reply.json()
    last = ""
    async with client.stream("GET", run["events"]) as stream:
        async for line in stream.aiter_lines():
            if line.startswith("event: "):
                last = line[7:]
    seconds = time.perf_counter() - started
    if last != "done":
        return None, seconds, 202
    output = (await client.get(f"/runs/{run['run_id']}")).json()["output"]
    output.pop("usage", None)
    return output, seconds, 202


async def _serve_load(base: str, questions: list[str], bursts: int, burst: int) -> None:
    async with httpx.AsyncClient(base_url=base, timeout=120) as client:
        alone: dict[str, dict[str, Any] | None] = {}
        lone_latencies = []
        started = time.perf_counter()
        for question in questions:
            alone[question], seconds, _ = await _run(client, question)
            lone_latencies.append(seconds)
        _figures(
            "serve, one run at a time",
            lone_latencies,
            sum(v is None for v in alone.values()),
            time.perf_counter() - started,
            "runs",
        )
        latencies: list[float] = []
        errors = refused = 0
        started = time.perf_counter()
        for b in range(bursts):
            asked = [questions[(b * burst + i) % len(questions)] for i in range(burst)]
            results = await asyncio.gather(*(_run(client, q) for q in asked))
            for question, (output, seconds, status) in zip(asked, results, strict=True):
                latencies.append(seconds)
                refused += status == 503
                errors += output is None or output != alone[question]
        _figures(f"serve, bursts of {burst}", latencies, errors, time.perf_counter() - started, "runs")
        print(f"serve: {refused} of the errors were 503 (too many waiting)")


def bench_serve(questions: int, bursts: int, burst: int, concurrent: int) -> None:
    with (DATA / "hotpotqa_dev20_questions.jsonl").open(encoding="utf-8") as handle:
        pool = [json.loads(line)["question_text"] for line in handle]
    asked = [pool[i % len(pool)] for i in range(questions - 1)]
    asked.append("Where was the performer of Spirit If... born?")  # the fake LLM's own question: 2+ rounds
    port = _port()
    model = ["--model", "import:tests.fakes:slow_serve_llm", "--reader", "llm"]
    corpus = ["--corpus", str(DATA / "searchain_demo.jsonl"), "--max-concurrent", str(concurrent)]
    process = _start(["serve", *model, *corpus], port)
    try:
        asyncio.run(_serve_load(f"http://127.0.0.1:{port}", asked, bursts, burst))
    finally:
        stopped = _stop(process)
    print(f"serve: stopped {stopped:.2f} s after SIGTERM")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--bursts", type=int, default=4)
    parser.add_argument("--burst", type=int, default=16)
    parser.add_argument("--max-concurrent", type=int, default=4)
    parser.add_argument("--only", choices=["index", "serve"], default=None)
    args = parser.parse_args()
    if args.only != "serve":
        bench_index(args.queries, args.concurrency)
    if args.only != "index":
        bench_serve(args.questions, args.bursts, args.burst, args.max_concurrent)


if __name__ == "__main__":
    main()
