"""A PostgreSQL database that turns read-only under two real ``searchain serve`` replicas, and back.

The whole test server is made read-only (``ALTER SYSTEM SET default_transaction_read_only = on`` and
a reload: every session, open ones included, refuses writes from its next statement; no connection
is cut) while a run is in flight on one replica, its events followed through both. The run fails at
its first refused write: its stream through its replica ends with a ``failed`` event naming the
refusal, ``GET /runs/ID`` says ``error``; ``POST /runs`` is a ``503`` with ``Retry-After``; no replica
takes the run over while writes are refused. Once writes work again, the failure is stored, and the
stream through the other replica ends with the same event.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import free_port, kill_session, post_run, serve_events, start_serve, wait_healthy
from tests.postgres_tests.test_postgres_claims import SERVE_QUESTION as QUESTION

httpx = pytest.importorskip("httpx")
pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

ENDS_WITHIN_S = 10.0
"""A run's stream through its replica ends this soon after its database refuses writes."""
SCANS_S = 11.0
"""How long the replicas are watched while writes are refused: two scans for orphaned runs of each."""


def _read_only(url: str, on: bool) -> None:
    """Make the whole test server read-only (``on``) or writable again, open sessions included."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute("SET default_transaction_read_only = off")
        if on:
            admin.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            admin.execute("ALTER SYSTEM RESET default_transaction_read_only")
        admin.execute("SELECT pg_reload_conf()")


def _stored(url: str, run_id: str) -> tuple[str, list[str]]:
    """The run's status and event names as the database holds them."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT status FROM searchain_runs WHERE id = %s", (run_id,)).fetchone()
        names = conn.execute("SELECT event FROM searchain_run_events WHERE run_id = %s ORDER BY seq", (run_id,))
        return (row[0] if row else "", [n for (n,) in names.fetchall()])


class _Follower(threading.Thread):
    """Reads a run's events through a replica to the end of the stream; ``ended``: when it ended."""

    def __init__(self, port: int, run_id: str) -> None:
        super().__init__(daemon=True)
        self.port, self.run_id = port, run_id
        self.events: list[dict[str, Any]] = []
        self.ended: float | None = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.events = serve_events(self.port, self.run_id)
        except BaseException as exc:  # noqa: BLE001 - shown by the test
            self.error = exc
        self.ended = time.monotonic()


def test_a_database_that_refuses_writes_fails_the_run_at_once_and_no_replica_takes_it_over(
    postgres_url: str, tmp_path: Path
) -> None:
    ports = [free_port(), free_port()]
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    processes = [start_serve(postgres_url, port, log, wait=False) for port, log in zip(ports, logs, strict=True)]
    a, b = ports
    read_only = False
    try:
        for process, port, log in zip(processes, ports, logs, strict=True):
            wait_healthy(process, port, log=log)
        run_id = post_run(a, QUESTION)
        followers = [_Follower(a, run_id), _Follower(b, run_id)]
        for follower in followers:
            follower.start()
        deadline = time.monotonic() + 30
        while httpx.get(f"http://127.0.0.1:{a}/runs/{run_id}", timeout=10).json()["events"] < 3:
            assert time.monotonic() < deadline, "the run never got going"
            time.sleep(0.05)
        _read_only(postgres_url, True)
        read_only = True
        refused = time.monotonic()

        # The stream through its replica ends with the failure, within ENDS_WITHIN_S.
        followers[0].join(ENDS_WITHIN_S + 5)
        tails = lambda: [log.read_text(errors="replace")[-3000:] for log in logs]  # noqa: E731
        assert followers[0].ended is not None, ("the stream never ended", tails())
        assert followers[0].error is None, followers[0].error
        took = followers[0].ended - refused
        assert took < ENDS_WITHIN_S, (took, tails())
        last = followers[0].events[-1]
        assert last["event"] == "failed" and "refuses writes" in last["data"]["error"], last
        shown = httpx.get(f"http://127.0.0.1:{a}/runs/{run_id}", timeout=10).json()
        assert shown["status"] == "error" and "refuses writes" in shown["error"], shown
        listed = httpx.get(f"http://127.0.0.1:{a}/runs", timeout=10).json()["runs"]
        assert [r["status"] for r in listed if r["run_id"] == run_id] == ["error"], listed

        # New runs are refused for now, on either replica, and health says why.
        for port in ports:
            reply = httpx.post(f"http://127.0.0.1:{port}/runs", json={"question": QUESTION}, timeout=10)
            assert reply.status_code == 503 and reply.headers.get("retry-after"), reply.text
            health = httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=10)
            assert health.status_code == 503 and "read-only" in health.json()["store"], health.text

        # No replica takes the run up while writes are refused (each scans every 5 s).
        time.sleep(max(0.0, refused + SCANS_S - time.monotonic()))
        assert not any("took over" in tail for tail in tails()), tails()
        shown = httpx.get(f"http://127.0.0.1:{a}/runs/{run_id}", timeout=10).json()
        assert shown["status"] == "error", shown
        assert _stored(postgres_url, run_id)[0] == "running"  # held by its replica, not stored yet

        # Writes work again: the failure is stored, the stream through the other replica ends with it.
        _read_only(postgres_url, False)
        read_only = False
        followers[1].join(20)
        assert followers[1].ended is not None and followers[1].error is None, (followers[1].error, tails())
        assert followers[1].events[-1] == last, followers[1].events[-1]
        status, names = _stored(postgres_url, run_id)
        assert status == "error" and names[-1] == "failed" and names.count("failed") == 1, (status, names)
        assert [int(e["id"]) for e in followers[1].events] == list(range(len(followers[1].events)))
        shown = httpx.get(f"http://127.0.0.1:{b}/runs/{run_id}", timeout=10).json()
        assert shown["status"] == "error" and "refuses writes" in shown["error"], shown
        assert httpx.post(f"http://127.0.0.1:{a}/runs", json={"question": QUESTION}, timeout=10).status_code == 202
        assert not any("took over" in tail for tail in tails()), tails()
    finally:
        if read_only:
            _read_only(postgres_url, False)
        for process in processes:
            kill_session(process)
