"""The CPU meter of evaluation records: this process's CPU seconds and every other process's."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from searchain_graph.evaluation.cpu_meter import (
    CONTENDED_CORES,
    CpuMeter,
    contended,
    machine_busy_seconds,
    own_seconds,
)
from searchain_graph.evaluation.report import render_report

HZ = os.sysconf("SC_CLK_TCK")


def _stat(path: Path, user: int, system: int, idle: int, steal: int = 0) -> Path:
    # user nice system idle iowait irq softirq steal guest guest_nice
    path.write_text(f"cpu  {user} 0 {system} {idle} 50 3 2 {steal} 7 0\ncpu0 1 2 3 4\nintr 1\n", encoding="ascii")
    return path


def test_busy_time_counts_busy_fields_only(tmp_path: Path) -> None:
    stat = _stat(tmp_path / "stat", user=1000, system=200, idle=9000, steal=5)
    # user + system + irq + softirq + steal; not idle, iowait, nor guest (already in user).
    assert machine_busy_seconds(stat) == pytest.approx((1000 + 200 + 3 + 2 + 5) / HZ)


@pytest.mark.parametrize("text", ["", "intr 1 2\n", "cpu  a b c\n", "\ud800".encode("utf-8", "surrogatepass")])
def test_an_unreadable_stat_reads_nothing(tmp_path: Path, text: str | bytes) -> None:
    stat = tmp_path / "stat"
    stat.write_bytes(text if isinstance(text, bytes) else text.encode())
    assert machine_busy_seconds(stat) is None
    assert machine_busy_seconds(tmp_path / "missing") is None
    assert CpuMeter(stat).stop() is None


def test_other_processes_time_is_the_machines_less_this_ones(tmp_path: Path) -> None:
    stat = _stat(tmp_path / "stat", user=1000, system=200, idle=9000)
    meter = CpuMeter(stat)
    _stat(stat, user=1000 + 10 * HZ, system=200 + 2 * HZ, idle=9000)  # 12 busy seconds meanwhile
    reading = meter.stop()
    assert reading is not None
    assert 0 <= reading.own < 1.0  # this test used almost nothing
    assert reading.others == pytest.approx(12.0 - reading.own, abs=0.05)
    assert set(reading.as_record()) == {"own_seconds", "others_seconds"}


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="Linux's /proc/stat")
def test_the_real_meter_sees_this_process_work() -> None:
    meter = CpuMeter()
    before = own_seconds()
    deadline = time.process_time() + 0.3
    while time.process_time() < deadline:
        pass
    reading = meter.stop()
    assert reading is not None and reading.own >= 0.25 and reading.others >= 0.0
    assert own_seconds() - before >= 0.25


def _record(qid: str, seconds: float, others: float | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "qid": qid,
        "dataset": "hotpotqa",
        "method": "cot",
        "question": "q",
        "answers": ["a"],
        "prediction": "a",
        "metrics": {"cover_em": 1.0, "em": 1.0, "f1": 1.0},
        "usage": {},
        "rounds": 1,
        "seconds": seconds,
    }
    if others is not None:
        record["cpu"] = {"own_seconds": seconds, "others_seconds": others}
    return record


def test_the_report_flags_seconds_measured_beside_other_work() -> None:
    quiet = _record("q1", 10.0, 0.1)
    busy = _record("q2", 10.0, 10.0 * CONTENDED_CORES)
    older = _record("q3", 10.0, None)  # a record from before the meter: nothing to say
    assert not contended(quiet) and contended(busy) and not contended(older)
    assert not contended({**busy, "seconds": 0})
    for odd in ("9", None, True, [1], {"x": 1}, float("nan")):  # hand-edited records: no reading, no crash
        assert not contended({**busy, "cpu": {"others_seconds": odd}})
        assert not contended({**busy, "seconds": odd})
    assert not contended({**busy, "cpu": "busy"})
    text = render_report([quiet, busy, older])
    assert "**Seconds measured beside other work:** 1 of 3 records (cot 1)" in text
    assert "beside other work" not in render_report([quiet, older])
