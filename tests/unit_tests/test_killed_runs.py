"""Commands killed with SIGKILL at random points, then run again: nothing lost, duplicated or half-written.

``searchain eval`` on a fast fake setup (a rule-based LLM taking 30 ms per call, BM25 over the
dataset's paragraphs, the LLM reader) is killed :data:`KILLS` times (``SEARCHAIN_KILLS``, default
20) and resumed each time; every fifth kill also leaves a torn half-record at the end of the
results file, as a kill in the middle of a write would. The records and the report must equal
those of a run never interrupted. ``searchain index`` is killed mid-build: the previous index
stays whole and opens, the ``.partial`` directory is cleared by the next build, and no worker
process outlives the command.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from searchain_graph.evaluation.harness import read_records
from searchain_graph.evaluation.report import render_report
from searchain_graph.ir.index import load_index
from searchain_graph.ir.index_dir import read_manifest
from tests.fakes import PASSAGES, QUESTION
from tests.helpers import living_in_session

ROOT = Path(__file__).resolve().parents[2]
KILLS = int(os.environ.get("SEARCHAIN_KILLS", "20"))
"""SIGKILLs of ``searchain eval`` per test run (the issue asks for at least 20)."""
INDEX_KILLS = max(3, KILLS // 3)

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return env


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "searchain_graph", *args]


def _no_orphans(session: int) -> None:
    if not Path("/proc/self/stat").is_file():
        return
    deadline = time.monotonic() + 10
    while living_in_session(session) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert living_in_session(session) == [], "a worker outlived the killed command"


def _kill(proc: subprocess.Popen[bytes]) -> bool:
    """SIGKILL ``proc`` if it still runs; True when it was killed."""
    if proc.poll() is not None:
        return False
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _no_orphans(proc.pid)
    return True


def _size(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


def _dataset(path: Path, questions: int) -> Path:
    rows = [
        {
            "question_id": f"k{n:03d}",
            "question_text": QUESTION if n % 2 == 0 else f"{QUESTION} ({n})",
            "answers_objects": [{"spans": ["Toronto Coach Terminal"]}],
            "contexts": [
                {"title": d.metadata["title"], "paragraph_text": d.page_content, "is_supporting": i == 0}
                for i, d in enumerate(PASSAGES)
            ],
        }
        for n in range(questions)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _eval(data: Path, out: Path) -> list[str]:
    return _command(
        "eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "searchain,cot,direct",
        "--model", "import:tests.fakes:slow_serve_llm", "--reader", "llm", "--concurrency", "4",
        "--out", str(out), "--quiet",
    )  # fmt: skip


def _comparable(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records without their wall time, CPU seconds and LLM-cache hits, in a fixed order.

    Threads finish in any order, and a killed process loses the replies it kept in memory, so a
    resumed run answers fewer calls from its cache; what each call returned is the same.
    """
    timeless = (
        {**{k: v for k, v in r.items() if k != "cpu"}, "seconds": 0.0, "usage": _without_hits(r.get("usage"))}
        for r in records
    )
    return sorted(timeless, key=lambda r: (r["qid"], r["method"]))


def _without_hits(usage: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if usage is None else {k: v for k, v in usage.items() if k != "llm_cache_hits"}


def _pages(report: Path) -> dict[str, bytes]:
    return {str(p.relative_to(report)): p.read_bytes() for p in sorted(report.rglob("*.md"))}


def test_eval_killed_again_and_again_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    rng = random.Random(20241123)
    questions = 120  # 60 ran out before 20 kills landed on a quiet, fast machine
    data = _dataset(tmp_path / "hotpot.jsonl", questions)
    out = tmp_path / "killed.jsonl"
    kills = torn = 0
    for life in range(10 * KILLS):
        if kills >= KILLS:
            break
        before = _size(out)
        proc = subprocess.Popen(_eval(data, out), env=_env(), start_new_session=True, stderr=subprocess.PIPE)
        if life % 4 == 3:  # anywhere: while starting, loading, running or writing the report
            time.sleep(rng.uniform(0.0, 3.0))
        else:  # while records are being written
            deadline = time.monotonic() + 120
            while _size(out) == before and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, 0.1))
        if not _kill(proc):
            assert proc.returncode == 0, proc.stderr.read().decode() if proc.stderr else ""
            break
        kills += 1
        if kills % 5 == 0 and _size(out):  # a kill in the middle of a write leaves half a record
            last = out.read_bytes().rstrip(b"\n").rsplit(b"\n", 1)[-1]
            with out.open("ab") as handle:
                handle.write(last[: len(last) // 2])
            torn += 1
    assert kills >= KILLS, f"only {kills} kill(s) landed before the run finished"
    assert torn >= KILLS // 5
    done = subprocess.run(_eval(data, out), env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    clean = tmp_path / "clean.jsonl"
    fresh = subprocess.run(_eval(data, clean), env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert fresh.returncode == 0, fresh.stderr

    lines = out.read_text(encoding="utf-8").splitlines()
    keys = [(r["qid"], r["method"]) for r in map(json.loads, lines)]  # every line whole
    assert len(keys) == len(set(keys)) == questions * 3  # 0 lost, 0 duplicated
    killed, uninterrupted = read_records(out), read_records(clean)
    assert all(r["error"] is None for r in killed)
    assert _comparable(killed) == _comparable(uninterrupted)
    assert render_report(_comparable(killed)) == render_report(_comparable(uninterrupted))
    assert _pages(tmp_path / "killed-report").keys() == _pages(tmp_path / "clean-report").keys()
    for name, page in _pages(tmp_path / "killed-report").items():
        if name != "report.md":  # report.md differs only in the seconds column, compared above
            assert page == _pages(tmp_path / "clean-report")[name], name
    assert not list((tmp_path / "killed-report").rglob("*.tmp"))


def _corpus(path: Path, passages: int, seed: int) -> Path:
    rng = random.Random(seed)
    words = "alpha beta gamma delta toronto montreal bus terminal album singer river city born lake".split()
    with path.open("w", encoding="utf-8") as handle:
        for n in range(passages):
            text = " ".join(rng.choices(words, k=40))
            handle.write(json.dumps({"id": f"{seed}-{n}", "title": f"T{n}", "text": text}) + "\n")
    return path


def _top(directory: Path) -> str:
    return str(load_index(directory, k=1).invoke("toronto bus terminal")[0].metadata["id"])


def test_index_killed_mid_build_leaves_the_old_index_whole(tmp_path: Path) -> None:
    rng = random.Random(7)
    index = tmp_path / "idx"
    old = subprocess.run(
        _command("index", str(_corpus(tmp_path / "old.jsonl", 500, 1)), "--out", str(index), "--quiet"),
        env=_env(), capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert old.returncode == 0, old.stderr
    old_top, new_corpus = _top(index), _corpus(tmp_path / "new.jsonl", 60_000, 2)
    build = _command("index", str(new_corpus), "--out", str(index), "--workers", "2", "--quiet")
    kills = 0
    for _ in range(4 * INDEX_KILLS):
        if kills >= INDEX_KILLS:
            break
        proc = subprocess.Popen(build, env=_env(), start_new_session=True, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while not (tmp_path / "idx.partial").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 1.5))
        if not _kill(proc):
            pytest.fail("the build finished before the kill: make the corpus larger")
        kills += 1
        assert read_manifest(index)["passages"] == 500  # the old index, whole
        assert _top(index) == old_top
    assert kills >= INDEX_KILLS
    assert (tmp_path / "idx.partial").exists()  # what the killed build left
    done = subprocess.run(build, env=_env(), capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert read_manifest(index)["passages"] == 60_000
    assert _top(index).startswith("2-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["idx", "new.jsonl", "old.jsonl"]


def test_a_build_killed_between_its_two_renames_keeps_the_old_index(tmp_path: Path) -> None:
    from searchain_graph.ir.index import build_index

    index = tmp_path / "idx"
    build_index([_corpus(tmp_path / "a.jsonl", 50, 1)], index)
    old_top = _top(index)
    # The state a kill between ``DIR -> DIR.old`` and ``DIR.partial -> DIR`` leaves.
    build_index([_corpus(tmp_path / "b.jsonl", 60, 2)], tmp_path / "idx.partial")
    index.rename(tmp_path / "idx.old")
    assert _top(index) == old_top and read_manifest(index)["passages"] == 50  # put back on open
    # A build killed after both renames, before it deleted DIR.old: the next build clears it.
    shutil.copytree(index, tmp_path / "idx.old")
    summary = build_index([tmp_path / "b.jsonl"], index)
    assert summary.passages == 60 and _top(index).startswith("2-")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "idx"]


def test_temporary_files_of_dead_writers_are_cleared(tmp_path: Path) -> None:
    from searchain_graph._files import remove_stale_temporaries, write_aside

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = int(gone.stdout), os.getpid()
    (tmp_path / "trees").mkdir()
    stale = tmp_path / "trees" / f".q1.md.{dead}-1.tmp"
    live = tmp_path / f".report.md.{alive}-1.tmp"
    for path in (stale, live):
        path.write_text("half")
    assert remove_stale_temporaries(tmp_path) == 0  # not recursive: the stale one is in trees/
    assert remove_stale_temporaries(tmp_path, recursive=True) == 1
    assert not stale.exists() and live.exists()  # a running writer's file is left to it
    assert write_aside(tmp_path / "trees" / "q1.md", "whole").read_text() == "whole"
    assert sorted(p.name for p in (tmp_path / "trees").iterdir()) == ["q1.md"]
