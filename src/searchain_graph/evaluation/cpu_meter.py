"""What else the machine did while a pair ran: CPU seconds of this process and of every other one.

An evaluation record's ``seconds`` is wall time, and wall time is only comparable between runs
when nothing else competed for the cores. :class:`CpuMeter` measures around one pair both this
process's CPU time (all its threads, and its children that ended) and the machine's busy CPU time
(``/proc/stat``), so a record says how many CPU seconds *other* processes took meanwhile. The
report flags records whose seconds were measured beside other work
(:func:`contended`), instead of mixing them silently into Table 5.

Linux only: elsewhere (no ``/proc/stat``) the meter reads nothing and records carry no ``cpu``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CONTENDED_CORES", "CpuMeter", "CpuReading", "contended", "machine_busy_seconds", "own_seconds"]

PROC_STAT = Path("/proc/stat")

CONTENDED_CORES = 0.25
"""Other processes' mean CPU use, in cores, from which a record's seconds count as measured beside
other work. An idle machine's own housekeeping stays well under it (about 0.01 here)."""

# Fields of /proc/stat's "cpu" line that are busy time: user, nice, system, irq, softirq, steal.
# idle and iowait are not; guest and guest_nice are already counted in user and nice.
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)


def machine_busy_seconds(stat: Path = PROC_STAT) -> float | None:
    """Busy CPU seconds of the whole machine since boot, summed over cores (``None`` without ``/proc/stat``)."""
    try:
        first = stat.read_text(encoding="ascii").splitlines()[0].split()
    except (OSError, IndexError, UnicodeDecodeError):
        return None
    if not first or first[0] != "cpu":
        return None
    try:
        ticks = [int(v) for v in first[1:]]
    except ValueError:
        return None
    return sum(ticks[i] for i in _BUSY_FIELDS if i < len(ticks)) / os.sysconf("SC_CLK_TCK")


def own_seconds() -> float:
    """CPU seconds this process has used: every thread, and the children it waited for."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


@dataclass(frozen=True)
class CpuReading:
    """CPU seconds used during one measured span."""

    own: float
    """This process (all its threads; with several pairs at once, theirs together)."""
    others: float
    """Every other process on the machine."""

    def as_record(self) -> dict[str, float]:
        """The record's ``cpu`` field."""
        return {"own_seconds": round(self.own, 2), "others_seconds": round(self.others, 2)}


class CpuMeter:
    """Measures one span: ``meter = CpuMeter(); ...; reading = meter.stop()``."""

    def __init__(self, stat: Path = PROC_STAT) -> None:
        self._stat = stat
        self._busy = machine_busy_seconds(stat)
        self._own = own_seconds()

    def stop(self) -> CpuReading | None:
        """The CPU seconds used since the meter started (``None`` where the machine's total is unreadable)."""
        busy = machine_busy_seconds(self._stat)
        own = own_seconds() - self._own
        if busy is None or self._busy is None:
            return None
        # Clock ticks are sampled apart from os.times(): a few ticks of disagreement are noise.
        return CpuReading(own=own, others=max(0.0, busy - self._busy - own))


def contended(record: dict[str, Any], cores: float = CONTENDED_CORES) -> bool:
    """Other processes used at least ``cores`` on average while the record's pair ran."""
    cpu = record.get("cpu")
    others = _number(cpu.get("others_seconds")) if isinstance(cpu, dict) else None
    seconds = _number(record.get("seconds"))
    if others is None or seconds is None:  # no reading, or a hand-edited record of other types
        return False
    return seconds > 0 and others / seconds >= cores


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
