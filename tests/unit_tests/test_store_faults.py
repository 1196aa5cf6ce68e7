"""``searchain serve --db FILE`` when the SQLite file misbehaves: shared, unreadable, full, bad, locked, deleted.

* A second server on one file is refused (an exclusive lock on ``FILE.lock``), before its model loads.
* A stored row that cannot be read is left out with a warning naming it; a start that fails anyway
  closes the checkpointer and the store, and the process exits (non-zero) rather than hang.
* A store that cannot write (disk full, a file locked by another program, a file deleted while
  serving) ends the open event streams with the failure, refuses new runs with a 503 and says so
  on ``/healthz`` (503), until it can write again.
* A ``--db`` that cannot be used is refused in one line before anything loads.
* Runs paused for review and runs in flight are read back however old (only finished ones are
  limited to the newest ``--keep-runs``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("langgraph.checkpoint.sqlite")

from langchain_core.messages import BaseMessage
from starlette.testclient import TestClient

from searchain_graph import create_searchain_graph
from searchain_graph.cli import serve as cli_serve
from searchain_graph.cli.main import main
from searchain_graph.serve import create_app
from searchain_graph.serve.runs import RunManager
from searchain_graph.serve.sqlite_store import SqliteRunStore
from searchain_graph.serve.store import StoredRun, StoreOpenError
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm
from tests.helpers import read_events

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples" / "data" / "searchain_demo.jsonl")
LOCAL = "http://127.0.0.1"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


def _graph(llm: Any = None) -> Any:
    return create_searchain_graph(llm or tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5)


class _Gate:
    """An LLM whose first call waits until released: the moment to break the store under a live run."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        inner = tree_llm().respond

        def respond(messages: Sequence[BaseMessage]) -> str:
            if not self.entered.is_set():
                self.entered.set()
                self.release.wait(30)
            reply: str = inner(messages)
            return reply

        self.model = RuleChatModel(respond=respond)


def _serve_cli(db: Path | str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """``searchain serve --db DB`` through the CLI, with a model load that fails the test if it is reached."""

    def no_model(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the model was loaded before --db was checked")

    monkeypatch.setattr(cli_serve, "build_graph", no_model)
    code = main(["serve", "--corpus", DEMO, "--model", "import:tests.fakes:serve_llm", "--db", str(db)])
    return code, capsys.readouterr().err


def _in_thread(work: Any) -> tuple[threading.Thread, list[Any]]:
    """Run ``work()`` in a daemon thread (a stream that never ends cannot hang the test run); its result."""
    out: list[Any] = []
    thread = threading.Thread(target=lambda: out.append(work()), daemon=True)
    thread.start()
    return thread, out


# 1. Two servers on one file.


def test_a_second_server_on_one_sqlite_file_is_refused_before_its_model_loads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "serve.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from searchain_graph.serve.sqlite_store import SqliteRunStore; "
            "store = SqliteRunStore(sys.argv[1]); print('held', flush=True); sys.stdin.read()",
            str(db),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=_env(),
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        with pytest.raises(StoreOpenError, match=rf"another server uses this file \(process {holder.pid}\)"):
            SqliteRunStore(db)
        code, err = _serve_cli(db, monkeypatch, capsys)
        assert code == 2
        assert err.count("\n") == 1 and err.startswith(f"searchain: error: --db {db}: another server uses this file")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(30)
    first = SqliteRunStore(db)  # the lock went with the process
    with pytest.raises(StoreOpenError, match="another server uses this file"):
        SqliteRunStore(db)  # two stores of one process are refused too
    first.close()
    SqliteRunStore(db).close()  # and close() gives it up


# 2. Unreadable rows, and a start that fails.


def _rows_of_every_kind(db: Path) -> None:
    store = SqliteRunStore(db)
    for rid in ("good", "bad-output", "bad-created", "bad-event", "old-event"):
        store.record(
            rid, {"id": 0, "event": "done", "data": {"answer": "A"}}, StoredRun(rid, "Q?", f"t-{rid}", 1, "done")
        )
    store._run("UPDATE searchain_runs SET output = '{not json' WHERE id = 'bad-output'", write=True)
    store._run("UPDATE searchain_runs SET created = 'yesterday' WHERE id = 'bad-created'", write=True)
    store._run("UPDATE searchain_run_events SET data = '{not json' WHERE run_id = 'bad-event'", write=True)
    store._run("UPDATE searchain_run_events SET data = '\"an older layout\"' WHERE run_id = 'old-event'", write=True)
    store.close()


def test_unreadable_rows_are_left_out_with_a_warning_naming_each(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    db = tmp_path / "serve.db"
    _rows_of_every_kind(db)
    caplog.set_level(logging.WARNING, logger="searchain_graph.serve.store")
    with TestClient(create_app(_graph(), db=db), base_url=LOCAL) as client:
        assert [r["run_id"] for r in client.get("/runs").json()["runs"]] == ["good"]
        assert client.get("/runs/bad-output").status_code == 404
    warned = "\n".join(r.getMessage() for r in caplog.records)
    for rid in ("bad-output", "bad-created", "bad-event", "old-event"):
        assert f"stored run {rid} is left out" in warned
    assert "'yesterday' is no number" in warned and "its events cannot be read" in warned


def _threads() -> set[threading.Thread]:
    # Daemon threads too: under TestClient the checkpointer's thread is one (a thread inherits its
    # creator's), while in `searchain serve` it is not, and keeps the process alive.
    return set(threading.enumerate())


def test_a_start_that_fails_closes_the_checkpointer_and_the_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "serve.db"
    before = _threads()

    async def fails(self: RunManager) -> list[Any]:
        raise RuntimeError("restore failed")

    monkeypatch.setattr(RunManager, "restore", fails)
    with pytest.raises(RuntimeError, match="restore failed"), TestClient(create_app(_graph(), db=db), base_url=LOCAL):
        pass
    deadline = time.monotonic() + 10
    while _threads() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _threads() - before, "a thread the failed start opened is still running"
    SqliteRunStore(db).close()  # the store was closed: its lock is free


def test_a_server_that_cannot_start_exits_rather_than_hang(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    with sqlite3.connect(db) as conn:  # a table name the checkpointer needs is taken: its set-up fails
        conn.execute("CREATE VIEW writes AS SELECT 1 AS x")
    command = [sys.executable, "-m", "searchain_graph", "serve", "--model", "import:tests.fakes:serve_llm"]
    command += ["--reader", "llm", "--corpus", DEMO, "--port", "1", "--db", str(db), "--quiet"]
    try:
        done = subprocess.run(command, env=_env(), capture_output=True, text=True, timeout=120, check=False)
    except subprocess.TimeoutExpired:
        pytest.fail("the server neither started nor exited")
    assert done.returncode != 0
    assert "Cannot add a column to a view" in done.stderr and "Application startup failed" in done.stderr


# 3. A store that cannot write.


class _FullDisk:
    """The store's connection, with every write refused as on a full disk while ``full``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn, self.full = conn, True

    def execute(self, sql: str, *args: Any) -> Any:
        if self.full and sql.split()[0].upper() in ("INSERT", "UPDATE", "DELETE", "COMMIT"):
            raise sqlite3.OperationalError("database or disk is full")
        return self.conn.execute(sql, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


def test_a_store_that_cannot_write_ends_the_streams_refuses_runs_and_says_so(tmp_path: Path) -> None:
    db, gate = tmp_path / "serve.db", _Gate()
    app = create_app(_graph(gate.model), db=db)
    store = app.state.runs.store
    with TestClient(app, base_url=LOCAL) as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        reader, events = _in_thread(lambda: read_events(client, run["events"]))
        assert gate.entered.wait(30)
        full = _FullDisk(store._conn)
        store._conn = full  # type: ignore[assignment]
        gate.release.set()
        reader.join(30)
        assert not reader.is_alive(), "the run's event stream did not end"
        assert events[0][-1]["event"] == "failed"
        assert events[0][-1]["data"] == {
            "status": "error",
            "error": "the run could not be stored: cannot write: database or disk is full",
        }
        health = client.get("/healthz")
        assert health.status_code == 503
        assert health.json()["ok"] is False and health.json()["store"] == "cannot write: database or disk is full"
        refused = client.post("/runs", json={"question": QUESTION})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
        assert refused.json()["error"] == (
            "runs cannot be stored now (cannot write: database or disk is full); try again later"
        )
        full.full = False  # space again: the next check finds it, and runs start again
        assert client.get("/healthz").status_code == 200
        assert (
            read_events(client, client.post("/runs", json={"question": QUESTION}).json()["events"])[-1]["event"]
            == "done"
        )


FILE_SIZE_LIMIT = textwrap.dedent(
    """
    import json, resource, sys, threading
    from pathlib import Path
    from starlette.testclient import TestClient
    from searchain_graph.serve import create_app
    from tests.helpers import read_events
    from tests.unit_tests.test_store_faults import QUESTION, _Gate, _graph

    db, gate = Path(sys.argv[1]), _Gate()
    out = {}
    with TestClient(create_app(_graph(gate.model), db=db), base_url="http://127.0.0.1") as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        events = []
        reader = threading.Thread(target=lambda: events.extend(read_events(client, run["events"])), daemon=True)
        reader.start()
        gate.entered.wait(30)
        # No write beyond the journal's present end (as on a full disk): the next commit fails (EFBIG).
        size = Path(f"{db}-wal").stat().st_size
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))
        gate.release.set()
        reader.join(30)
        out["stream_ended"] = not reader.is_alive()
        out["last"] = events[-1] if events else None
        health = client.get("/healthz")
        out["health"] = [health.status_code, health.json()]
        post = client.post("/runs", json={"question": QUESTION})
        out["post"] = [post.status_code, post.json()]
        resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        out["health_after"] = client.get("/healthz").status_code
        out["post_after"] = client.post("/runs", json={"question": QUESTION}).status_code
    print(json.dumps(out))
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs RLIMIT_FSIZE as Linux applies it")
def test_a_file_size_limit_reached_mid_run_is_a_failed_run_a_503_and_an_unhealthy_store(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    done = subprocess.run(
        [sys.executable, "-c", FILE_SIZE_LIMIT, str(db)],
        env=_env(),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["stream_ended"] and out["last"]["event"] == "failed", out
    assert out["last"]["data"]["status"] == "error" and "I/O error" in out["last"]["data"]["error"], out
    status, health = out["health"]
    assert status == 503 and health["ok"] is False and health["store"].startswith("cannot write: "), out
    assert out["post"][0] == 503 and "runs cannot be stored now" in out["post"][1]["error"], out
    assert out["health_after"] == 200 and out["post_after"] == 202, out


# 4. A --db that cannot be used.


def _made(path: Path, content: bytes | None) -> Path:
    """A directory at ``path`` (``content`` None), else a file holding ``content``."""
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content)
    return path


def _truncated(path: Path) -> Path:
    store = SqliteRunStore(path)
    for n in range(200):
        store.record(
            f"r{n}", {"id": 0, "event": "done", "data": {"html": "x" * 2000}}, StoredRun(f"r{n}", "Q?", "t", n, "done")
        )
    store.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


def _other_layout(path: Path) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE searchain_runs (id TEXT PRIMARY KEY, question TEXT)")
    return path


def _read_only(path: Path) -> Path:
    SqliteRunStore(path).close()
    path.chmod(0o444)
    if os.access(path, os.W_OK):  # root writes whatever the mode: make the file immutable instead
        chattr = shutil.which("chattr")
        if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True).returncode:
            pytest.skip("cannot make a file read-only for this user")
    return path


BAD_PATHS: dict[str, tuple[Callable[[Path], Any], str]] = {
    "missing directory": (lambda p: p / "no-such-dir" / "serve.db", "no such directory"),
    "a directory": (lambda p: _made(p / "adir", None), "is a directory, not a SQLite file"),
    "not a database": (
        lambda p: _made(p / "junk.db", b"not a database at all" * 100),
        "not a SQLite database, or a damaged one (file is not a database)",
    ),
    "truncated": (lambda p: _truncated(p / "cut.db"), "damaged"),
    "read-only": (lambda p: _read_only(p / "ro.db"), "the file is read-only for this user"),
    "another layout": (lambda p: _other_layout(p / "other.db"), "searchain_runs lacks the column(s) thread_id"),
}


@pytest.mark.parametrize("case", list(BAD_PATHS))
def test_a_db_that_cannot_be_used_is_refused_in_one_line_before_the_model_loads(
    case: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make, reason = BAD_PATHS[case]
    db = make(tmp_path)
    try:
        code, err = _serve_cli(db, monkeypatch, capsys)
    finally:
        if case == "read-only" and shutil.which("chattr"):
            subprocess.run(["chattr", "-i", str(db)], capture_output=True, check=False)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith(f"searchain: error: --db {db}: "), err
    assert reason in err, err


# 5. Runs paused for review, and runs in flight, however old.


def test_runs_paused_for_review_and_in_flight_are_read_back_however_old(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    store = SqliteRunStore(db)
    review = {"round": 1, "node": 2, "id": "r1n2"}
    store.record(
        "paused", {"id": 0, "event": "review", "data": {"review": review}}, StoredRun("paused", "Q?", "tp", 1, "review")
    )
    store.save(StoredRun("waiting", QUESTION, "tw", 2, "queued"))
    for n in range(3):
        store.record(
            f"done{n}", {"id": 0, "event": "done", "data": {}}, StoredRun(f"done{n}", "Q?", f"t{n}", 10 + n, "done")
        )
    store.close()
    with TestClient(create_app(_graph(), db=db, keep_runs=1, max_waiting=1), base_url=LOCAL) as client:
        paused = client.get("/runs/paused")
        assert paused.status_code == 200 and paused.json()["status"] == "review" and paused.json()["review"] == review
        waiting = client.get("/runs/waiting")
        assert waiting.status_code == 200
        assert read_events(client, "/runs/waiting/events")[-1]["event"] == "done"  # resumed, and finished
        listed = [r["run_id"] for r in client.get("/runs").json()["runs"]]
        assert "paused" in listed and "done2" in listed and "done0" not in listed


# 6. A file locked by another program, and a file deleted while serving.


def test_a_file_locked_by_another_program_is_a_503_until_it_is_released(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    with TestClient(create_app(_graph(), db=db, store=SqliteRunStore(db, timeout=0.2)), base_url=LOCAL) as client:
        other = sqlite3.connect(db, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another program's write transaction, left open
        refused = client.post("/runs", json={"question": QUESTION})
        assert refused.status_code == 503 and "cannot write: database is locked" in refused.json()["error"]
        health = client.get("/healthz")
        assert health.status_code == 503 and health.json()["store"] == "cannot write: database is locked"
        other.execute("COMMIT")
        other.close()
        assert client.get("/healthz").status_code == 200
        run = client.post("/runs", json={"question": QUESTION})
        assert run.status_code == 202 and read_events(client, run.json()["events"])[-1]["event"] == "done"


def test_a_file_deleted_while_serving_is_a_503_not_a_500(tmp_path: Path) -> None:
    db = tmp_path / "serve.db"
    with TestClient(create_app(_graph(), db=db), base_url=LOCAL) as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        assert read_events(client, run["events"])[-1]["event"] == "done"
        for path in tmp_path.glob("serve.db*"):
            if path.name != "serve.db.lock":
                path.unlink()
        health = client.get("/healthz")
        assert health.status_code == 503 and "deleted or replaced" in health.json()["store"]
        refused = client.post("/runs", json={"question": QUESTION})
        assert refused.status_code == 503 and "deleted or replaced" in refused.json()["error"]
        assert client.get(f"/runs/{run['run_id']}").json()["status"] == "done"  # what it has is still shown
