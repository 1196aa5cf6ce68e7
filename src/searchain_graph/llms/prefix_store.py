"""Computed prompt prefixes kept on disk, so that a new process does not compute them again.

Every SearChain question opens with the same demonstrations, several hundred tokens that llama.cpp
computes once per process and then reuses from its slot. A short-lived process (``searchain ask``,
a worker that restarts) pays that prefill each time: about 20 s on two cores. A
:class:`PrefixStore` keeps a slot's computed state (llama.cpp's slot file) beside the prompt's
token ids; the next process restores the stored state that shares the longest prefix with its
first prompt, and llama.cpp continues from there.

Files, in one folder per model file and llama.cpp build (the state is only valid for both):

* ``<digest>.bin``: the slot's state, as llama.cpp writes it (about 28 KB a token for
  Qwen2.5-Coder-1.5B);
* ``<digest>.tokens.json``: the prompt's token ids, written before the ``.bin`` is renamed into
  place, so an entry is whole when its ``.bin`` exists.

A prompt is stored when it is at least ``min_tokens`` long and no stored prompt shares half of it,
so each kind of prompt (the CoQ prompt, the tracing prompt...) is kept once, whatever its
question. At most ``max_files`` are kept; the least recently used go first.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from searchain_graph._files import write_aside

logger = logging.getLogger(__name__)

__all__ = ["PrefixStore", "common_prefix"]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading ids ``a`` and ``b`` share."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PrefixStore:
    """Prompt prefixes' computed state in ``directory`` (see the module's docstring).

    Args:
        directory: One folder per model file and llama.cpp build; created when first written.
        max_files: Stored prompts kept; the least recently used are removed beyond it.
        min_tokens: Shorter prompts, and shorter shared prefixes, are not worth a file (128 tokens
            take about 4 s to compute on two cores, and under 0.1 s to restore).
    """

    def __init__(self, directory: Path, *, max_files: int = 8, min_tokens: int = 128) -> None:
        if max_files < 1 or min_tokens < 1:
            raise ValueError(f"max_files and min_tokens must be at least 1, got {max_files} and {min_tokens}")
        self.directory = Path(directory)
        self.max_files = max_files
        self.min_tokens = min_tokens
        self._lock = threading.Lock()

    def _entries(self) -> dict[str, list[int]]:
        entries: dict[str, list[int]] = {}
        if not self.directory.is_dir():
            return entries
        for state in self.directory.glob("*.bin"):
            if state.name.startswith("tmp-"):
                continue
            try:
                ids = json.loads(state.with_suffix(".tokens.json").read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue  # half-removed, or damaged: never restored
            if isinstance(ids, list) and all(isinstance(i, int) for i in ids):
                entries[state.stem] = ids
        return entries

    def best(self, ids: Sequence[int]) -> tuple[str, int] | None:
        """The stored state (its file name) sharing the longest prefix with ``ids``, and that length.

        ``None`` when none shares ``min_tokens``. The entry is marked as used.
        """
        with self._lock:
            found = max(
                ((name, common_prefix(stored, ids)) for name, stored in self._entries().items()),
                key=lambda entry: entry[1],
                default=None,
            )
        if found is None or found[1] < self.min_tokens:
            return None
        try:
            os.utime(self.directory / f"{found[0]}.bin")
        except OSError:
            return None  # removed since: compute as usual
        return f"{found[0]}.bin", found[1]

    def wants(self, ids: Sequence[int]) -> bool:
        """Whether ``ids`` is worth storing: long enough, and no stored prompt shares half of it."""
        if len(ids) < self.min_tokens:
            return False
        with self._lock:
            shared = max((common_prefix(stored, ids) for stored in self._entries().values()), default=0)
        return shared * 2 < len(ids)

    def scratch_name(self) -> str:
        """A file name for llama.cpp to save a slot into, before :meth:`commit` names it.

        Scratch files of processes that are gone (killed while saving) are removed first.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        for scratch in self.directory.glob("tmp-*.bin"):
            pid = scratch.name.split("-")[1]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                try:
                    scratch.unlink()
                except FileNotFoundError:
                    pass
        return f"tmp-{os.getpid()}-{threading.get_ident()}.bin"

    def commit(self, scratch: str, ids: Sequence[int]) -> str:
        """Name the saved slot ``scratch`` by its prompt ``ids``; drop the least recently used beyond ``max_files``.

        Returns:
            The entry's file name.
        """
        ids = [int(i) for i in ids]
        name = hashlib.sha256(json.dumps(ids).encode()).hexdigest()[:24]
        with self._lock:
            write_aside(self.directory / f"{name}.tokens.json", json.dumps(ids))
            os.replace(self.directory / scratch, self.directory / f"{name}.bin")
            states = sorted(
                (p for p in self.directory.glob("*.bin") if not p.name.startswith("tmp-")),
                key=lambda p: p.stat().st_mtime,
                reverse=True,
            )
            for old in states[self.max_files :]:
                for path in (old, old.with_suffix(".tokens.json")):
                    try:
                        path.unlink()
                    except FileNotFoundError:
                        pass
        return f"{name}.bin"

    def discard(self, scratch: str) -> None:
        """Remove a scratch file that was not committed."""
        try:
            (self.directory / scratch).unlink()
        except FileNotFoundError:
            pass
