"""Files written aside and renamed into place, so that a killed command never leaves one half-written.

Every layer writes files this way (calibrations, index manifests, tree pages, the evaluation
report), so the helper sits outside the layers, like :mod:`searchain_graph._version`.

The temporary file is named after the target and the writing process (``.NAME.PID-THREAD.tmp``,
beside ``NAME``): a process killed mid-write leaves at most that one file, which no reader
ever opens, and :func:`remove_stale_temporaries` clears the ones whose process is gone.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = ["remove_stale_temporaries", "write_aside", "written_aside"]

_TEMPORARY = re.compile(r"^\..+\.(?P<pid>\d+)-\d+\.tmp$")


def _temporary(target: Path) -> Path:
    """``.NAME.PID-THREAD.tmp``: two writers of one file never share a temporary file."""
    return target.with_name(f".{target.name}.{os.getpid()}-{threading.get_ident()}.tmp")


@contextlib.contextmanager
def written_aside(path: str | Path) -> Iterator[Path]:
    """A temporary path to write; renamed to ``path`` when the block ends without an error.

    Use it for writers that want a file name (``savefig``, ``np.save``). Parent directories
    are created. On an error the temporary file is removed and ``path`` is left as it was.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _temporary(target)
    try:
        yield tmp
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_aside(path: str | Path, data: str | bytes, *, sync: bool = False) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` aside, then rename it into place.

    Args:
        path: The file; parent directories are created.
        data: The whole content.
        sync: Flush the file to disk before the rename (for files that must survive a power
            cut, not only a killed process).

    Returns:
        ``path``, as a :class:`~pathlib.Path`.
    """
    target = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with written_aside(target) as tmp, tmp.open("wb") as handle:
        handle.write(payload)
        if sync:
            handle.flush()
            os.fsync(handle.fileno())
    return target


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def remove_stale_temporaries(directory: str | Path, *, recursive: bool = False) -> int:
    """Delete the temporary files that killed writers left in ``directory``; returns how many.

    A temporary file whose process is still running (a concurrent writer) is kept.
    """
    root = Path(directory)
    if not root.is_dir():
        return 0
    removed = 0
    for path in root.rglob(".*.tmp") if recursive else root.glob(".*.tmp"):
        match = _TEMPORARY.match(path.name)
        if match and path.is_file() and not _alive(int(match["pid"])):
            path.unlink(missing_ok=True)
            removed += 1
    return removed
