"""LLM calls kept in a SQLite file, on LangChain's own cache interface: :class:`SQLiteLLMCache`.

A chat model given ``cache=SQLiteLLMCache("calls.sqlite")`` (or every model, after
``langchain_core.globals.set_llm_cache``) answers a call it has made before from the file instead
of the model. LangChain keys each call by the exact messages and the model's *LLM string*: its
identifying parameters (for :class:`~searchain_graph.llms.chat_model.TransformersChatModel`, the
weights' SHA-256, the backend and ``max_new_tokens``; for ``ChatOpenAI``, the model, URL and
sampling settings) with the call's stop sequences, temperature and seed. A change of any of them
misses. Decoding is greedy by default, so a stored reply is the reply the model gives again.

* **Shared.** Any number of threads and processes may use one file: it is in WAL mode, each writer
  waits for the others (``busy_timeout``), and a reply is written in one transaction, so two
  processes that make the same call both keep one whole reply.
* **Counted.** A reply answered from the file carries ``response_metadata["llm_cache_hit"] = True``;
  :func:`is_cache_hit` reads it (and LangChain's own sign of a hit, for other caches), which the
  graph adds up in ``usage["llm_cache_hits"]``.
* **Damaged files.** A file that is not a readable SQLite database is moved aside
  (``NAME.corrupt-TIME``) with a warning, and a new one is started: a cache is never worth a crash.
* **The same file as the IR cache.** ``searchain eval --cache FILE`` keeps LangGraph's
  ``SqliteCache`` of retrievals and readings in the same file, in a table of its own.
"""

from __future__ import annotations

import hashlib
import logging
import sqlite3
import threading
import time
import warnings
from pathlib import Path
from typing import Any

from langchain_core._api import LangChainBetaWarning
from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.load import dumps, loads
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, Generation

logger = logging.getLogger(__name__)

__all__ = ["CACHE_HIT_KEY", "SQLiteLLMCache", "is_cache_hit", "set_aside_if_damaged"]

CACHE_HIT_KEY = "llm_cache_hit"
"""The ``response_metadata`` key set on a reply answered from the cache."""

BUSY_TIMEOUT_MS = 60_000
"""How long a write waits for another process's write to the same file."""


def set_aside_if_damaged(path: Path) -> Path | None:
    """Move ``path`` aside when it is not a readable SQLite database; return where it went (None: it is fine).

    A file that does not exist, or is empty, is fine: SQLite starts it.
    """
    if not path.is_file() or path.stat().st_size == 0:
        return None
    try:
        with sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000) as conn:
            row = conn.execute("PRAGMA quick_check").fetchone()
        conn.close()
        if row is not None and row[0] == "ok":
            return None
        why = str(row[0]) if row else "no answer to quick_check"
    except sqlite3.DatabaseError as exc:
        why = str(exc)
    aside = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
    path.replace(aside)
    for suffix in ("-wal", "-shm"):  # a damaged file's journal belongs to it, not to the new one
        journal = path.with_name(path.name + suffix)
        if journal.exists():
            journal.replace(aside.with_name(aside.name + suffix))
    logger.warning("the cache %s is damaged (%s): moved it to %s and started a new one", path, why, aside)
    return aside


class SQLiteLLMCache(BaseCache):
    """LangChain's ``BaseCache`` in one SQLite file, safe for several threads and processes.

    Args:
        path: The file (its folder is created). A damaged file is moved aside, with a warning.

    Raises:
        ValueError: ``path`` is a folder.

    Example:
        >>> from searchain_graph.llms.call_cache import SQLiteLLMCache
        >>> llm = load_chat_model(cache=SQLiteLLMCache("calls.sqlite"))  # doctest: +SKIP
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"the cache must be a file, and {self.path} is a folder")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        set_aside_if_damaged(self.path)
        self._lock = threading.Lock()
        self._conn = self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        with conn:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS llm_calls (prompt_key TEXT NOT NULL, llm_key TEXT NOT NULL, "
                "idx INTEGER NOT NULL, generation TEXT NOT NULL, PRIMARY KEY (prompt_key, llm_key, idx))"
            )
        return conn

    @staticmethod
    def _keys(prompt: str, llm_string: str) -> tuple[str, str]:
        def digest(text: str) -> str:
            return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

        return digest(prompt), digest(llm_string)

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """The stored generations of this call, each marked as a hit, or None."""
        keys = self._keys(prompt, llm_string)
        with self._lock:
            rows = self._conn.execute(
                "SELECT generation FROM llm_calls WHERE prompt_key = ? AND llm_key = ? ORDER BY idx", keys
            ).fetchall()
        if not rows:
            return None
        try:
            with warnings.catch_warnings():  # ``loads`` is marked beta; what it reads here is our own dumps
                warnings.simplefilter("ignore", LangChainBetaWarning)
                generations = [loads(row[0], allowed_objects="core") for row in rows]
        except Exception as exc:  # a row written by another version of LangChain: a miss, not a crash
            logger.warning("a cached LLM reply in %s could not be read (%s): calling the model", self.path, exc)
            return None
        return [_marked(g) for g in generations]

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store the generations of a call, in one transaction (two writers of one call: one whole reply stays)."""
        keys = self._keys(prompt, llm_string)
        rows = [(*keys, i, dumps(g)) for i, g in enumerate(return_val)]
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM llm_calls WHERE prompt_key = ? AND llm_key = ?", keys)
            self._conn.executemany("INSERT INTO llm_calls VALUES (?, ?, ?, ?)", rows)

    def clear(self, **kwargs: Any) -> None:
        """Forget every stored call."""
        with self._lock, self._conn:
            self._conn.execute("DELETE FROM llm_calls")

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0])

    def close(self) -> None:
        """Close the file."""
        with self._lock:
            self._conn.close()

    def __repr__(self) -> str:
        return f"SQLiteLLMCache({str(self.path)!r})"


def _marked(generation: Generation) -> Generation:
    """``generation`` with its message's ``response_metadata`` saying it came from the cache."""
    if isinstance(generation, ChatGeneration):
        meta = {**generation.message.response_metadata, CACHE_HIT_KEY: True}
        generation.message = generation.message.model_copy(update={"response_metadata": meta})
    return generation


def is_cache_hit(reply: BaseMessage) -> bool:
    """Whether a chat model's reply came from an LLM cache.

    True for a reply of :class:`SQLiteLLMCache`, and for any ``BaseCache`` whose hit LangChain marks
    as it does (``usage_metadata["total_cost"] == 0``, set only on cache hits).
    """
    if (getattr(reply, "response_metadata", None) or {}).get(CACHE_HIT_KEY):
        return True
    usage = getattr(reply, "usage_metadata", None) or {}
    return "total_cost" in usage and usage.get("total_cost") == 0
