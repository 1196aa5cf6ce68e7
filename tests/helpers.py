"""Helpers shared by the tests: float results of two code paths compared with a tolerance,
a web app run's server-sent events read to the end, an ASGI app served on 127.0.0.1, and a
script of the repository (a benchmark, an example) imported by its path.

Two code paths that compute the same value in float32 (a batch against a single read, an
async call against a sync one, mini-batches against one batch) may differ in the last
digits: padding or a different batch size picks other kernels and sums in another order,
and which ones depends on the machine. Such results are compared with :data:`FLOAT_TOLERANCE`;
answers, ids and order still have to match exactly.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from searchain_graph.ir.readers.base import ReaderOutput

ROOT = Path(__file__).resolve().parents[1]
"""The repository's root."""

FLOAT_TOLERANCE: dict[str, float] = {"rel": 1e-5, "abs": 1e-4}
"""Tolerance for float32 results of two code paths: float32 rounding is about 6e-8 relative."""


def script_module(path: str, *, register: bool = False) -> Any:
    """The script at ``path`` (from the repository's root: a benchmark, an example) imported as a module.

    ``register`` also puts it in ``sys.modules`` under its file's name, where dataclasses look
    their module up.
    """
    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    if register:
        sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def close(value: Any) -> Any:
    """``pytest.approx(value)`` with :data:`FLOAT_TOLERANCE` (a number or a flat sequence of numbers)."""
    return pytest.approx(value, **FLOAT_TOLERANCE)


def assert_reads_close(got: ReaderOutput | Sequence[ReaderOutput], want: ReaderOutput | Sequence[ReaderOutput]) -> None:
    """The same answers, exactly, and the same confidences up to float rounding.

    Takes one :class:`ReaderOutput` each or two sequences of them, pair by pair.
    """
    got_list = [got] if isinstance(got, ReaderOutput) else list(got)
    want_list = [want] if isinstance(want, ReaderOutput) else list(want)
    assert all(isinstance(out, ReaderOutput) for out in got_list), got_list
    assert [out.answer for out in got_list] == [out.answer for out in want_list]
    assert [out.confidence for out in got_list] == close([out.confidence for out in want_list])


def read_events(client: Any, url: str, last_id: int | None = None) -> list[dict[str, Any]]:
    """Every server-sent event of a run, parsed, until the stream ends."""
    headers = {"Last-Event-ID": str(last_id)} if last_id is not None else {}
    events: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    with client.stream("GET", url, headers=headers) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if not line:
                if current:
                    events.append(current)
                current = {}
            elif line.startswith(":"):
                continue
            else:
                field, _, value = line.partition(": ")
                current[field] = json.loads(value) if field == "data" else value
    return events


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def wait_healthy(process: Any, port: int, *, within: float = 120.0, log: Path | None = None) -> None:
    """Wait until the server ``process`` answers ``/healthz`` on 127.0.0.1:``port``; fail if it exits or is late.

    A process that does not come up is killed (its whole session), and the failure shows the end
    of ``log`` when given.
    """
    import os
    import signal

    import httpx

    deadline = time.monotonic() + within
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            shown = log.read_text(errors="replace")[-2000:] if log is not None and log.is_file() else ""
            pytest.fail(f"the server did not start: {shown}")
        time.sleep(0.1)


def start_serve(db: str | Path, port: int, log: Path, *, wait: bool = True) -> Any:
    """``searchain serve --db DB`` on ``port`` in a session of its own, with the paced rule LLM
    (:func:`tests.fakes.paced_serve_llm`), BM25 over the demo corpus and the LLM reader (``--reader
    llm``: no torch to import, so a restart takes about 2 s instead of the bundled reader's 8 s; the
    bundled reader's server is run in the serve and browser tests); its output appended to ``log``.
    ``wait``: return once it answers ``/healthz``.
    """
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    command = [sys.executable, "-m", "searchain_graph", "serve", "--model", "import:tests.fakes:paced_serve_llm"]
    command += ["--corpus", str(root / "examples" / "data" / "searchain_demo.jsonl"), "--port", str(port)]
    command += ["--reader", "llm", "--db", str(db), "--quiet"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
    with log.open("ab") as out:
        process = subprocess.Popen(
            command, cwd=root, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    if wait:
        wait_healthy(process, port, log=log)
    return process


def kill_session(process: Any) -> None:
    """SIGKILL ``process`` and its whole session (nothing of it survives), and reap it."""
    import os
    import signal

    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def kill_mid_run(process: Any, port: int, run_id: str, rng: Any, *, within: float = 60.0) -> None:
    """SIGKILL the server ``process`` (its whole session) while its run ``run_id`` is in flight.

    Waits until ``GET /runs/{run_id}`` on ``port`` says ``running``, then a further moment drawn by
    ``rng`` (0-0.6 s, shorter than a run of the paced LLM), so that kills land early and late in
    runs whatever the machine's speed. Fails if the run never starts within ``within`` seconds.
    """
    import httpx

    deadline = time.monotonic() + within
    while True:
        run = httpx.get(f"http://127.0.0.1:{port}/runs/{run_id}", timeout=10).json()
        if run["status"] == "running":
            break
        assert run["status"] == "queued" and time.monotonic() < deadline, run
        time.sleep(0.02)
    time.sleep(rng.uniform(0.0, 0.6))
    kill_session(process)


def post_run(port: int, question: str) -> str:
    """Start a run of ``question`` on the ``searchain serve`` on ``port``; its id (a 202 is required)."""
    import httpx

    reply = httpx.post(f"http://127.0.0.1:{port}/runs", json={"question": question}, timeout=10)
    assert reply.status_code == 202, reply.text
    run_id: str = reply.json()["run_id"]
    return run_id


def serve_events(port: int, run_id: str) -> list[dict[str, Any]]:
    """Every event of a run of the ``searchain serve`` on ``port``, read to the end of its stream."""
    import httpx

    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        return read_events(client, f"/runs/{run_id}/events")


def assert_runs_end(list_port: int, show_port: int, run_ids: list[str], *, within: float) -> None:
    """Wait until every run of ``run_ids`` has ended (``GET /runs`` on ``list_port``), then check each
    on ``show_port``: none lost, each done with an answer and final content, or failed with its reason.
    """
    import httpx

    deadline = time.monotonic() + within
    runs: dict[str, Any] = {}
    while time.monotonic() < deadline:
        runs = {r["run_id"]: r for r in httpx.get(f"http://127.0.0.1:{list_port}/runs", timeout=10).json()["runs"]}
        if all(runs.get(rid, {}).get("status") in ("done", "error") for rid in run_ids):
            break
        time.sleep(0.5)
    assert set(run_ids) <= set(runs), "a run was lost"
    for rid in run_ids:
        run = httpx.get(f"http://127.0.0.1:{show_port}/runs/{rid}", timeout=10).json()
        assert run["status"] in ("done", "error"), run
        if run["status"] == "error":
            assert run["error"], run
        else:
            assert run["answer"] and run["output"]["final_content"], run


@contextlib.contextmanager
def served(app: Any, port: int | None = None) -> Iterator[str]:
    """Run the ASGI ``app`` with uvicorn on 127.0.0.1 (``port``, else a free one) in a thread; yields its base URL."""
    import uvicorn

    port = port or free_port()
    # log_config=None: uvicorn would otherwise bind its log handlers to the sys.stderr of the moment,
    # which is pytest's capture of this test and is closed by the time a later test logs.
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(10)


def living_in_session(session: int) -> list[int]:
    """Processes of ``session`` still running (zombies, already dead, are not counted)."""
    living = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[3]) == session and fields[0] != "Z":
            living.append(int(stat.parent.name))
    return living


def assert_run_ends_are_whole(store: Any, refuse_done_events: Any) -> None:
    """``store.record`` writes a run's row and its event in one transaction: when the event is refused
    (``refuse_done_events()`` installs a trigger that refuses every ``done`` event), the row keeps its
    old status; a new run's row and first event go in together; the store stays usable.
    """
    from searchain_graph.serve.store import StoredRun

    store.record("b", {"id": 0, "event": "update", "data": {}}, StoredRun("b", "Q?", "tb", 2.0, "queued"))
    store.save(StoredRun("a", "Q?", "ta", 1.0, "running"))
    refuse_done_events()
    with pytest.raises(Exception, match="refused"):
        store.record("a", {"id": 0, "event": "done", "data": {}}, StoredRun("a", "Q?", "ta", 1.0, "done", None, {}))
    kept = store.get("a")
    assert kept is not None and kept.status == "running" and kept.events == []  # neither the row nor the event
    store.record("a", {"id": 0, "event": "failed", "data": {"error": "x"}}, StoredRun("a", "Q?", "ta", 1.0, "error"))
    ended, new = store.get("a"), store.get("b")
    assert ended is not None and ended.status == "error" and [e["event"] for e in ended.events] == ["failed"]
    assert new is not None and new.status == "queued" and [e["event"] for e in new.events] == ["update"]


def assert_prune_keeps_the_newest_finished(store: Any) -> None:
    """``store.prune(keep)`` forgets the finished runs beyond the newest ``keep``, with their events,
    returns their threads, and leaves runs in flight or paused for review alone, however old.
    """
    from searchain_graph.serve.store import StoredRun

    statuses = ["done", "error", "running", "review", "done", "queued"]
    for n, status in enumerate(statuses):
        store.record(f"r{n}", {"id": 0, "event": "update", "data": {}}, StoredRun(f"r{n}", "Q?", f"t{n}", n, status))
    assert sorted(store.prune(1)) == ["t0", "t1"]  # r4 is the newest finished run
    assert [r.id for r in store.rows(10)] == ["r5", "r4", "r3", "r2"]
    assert store.get("r0") is None and store.events_after("r0", -1) == []  # its events went with it
    assert store.prune(1) == [] and store.prune(-5) == ["t4"]
