"""Retrieval and reading as LangGraph tasks with a ``CachePolicy``, for graphs compiled with a cache.

A graph built with ``cache=`` (an ``InMemoryCache``, a ``SqliteCache``, any LangGraph
``BaseCache``) runs each retrieval and each reading as a task of its own, inside the IR check's
node, and LangGraph's cache answers the ones it has seen:

* a retrieval is keyed by the retriever, the query and ``k``;
* a reading by the reader, the query and the passage (its title and text: what the reader reads).

The retriever and the reader are named in the key by their ``cache_key`` (:func:`component_key`):
a :class:`~searchain_graph.ir.bm25.retriever.BM25Retriever` names its index's content, a reader its
weights and kind of *f* (its ``calibration_key``). A component without one gets a key of its own
for the life of the graph, so a cache shared by graphs over other corpora or readers never answers
for them. Hits are counted in ``usage`` (``retrieval_cache_hits``, ``reader_cache_hits``); the
calls asked for still count in ``retrieval_calls`` and ``reader_calls``, so Table 5 compares the
same thing whatever the cache held.

Without a cache, the driver calls the retriever and the reader directly (one batch per request),
as before: tasks cost a little (a run and, with a checkpointer, a saved write each).
"""

from __future__ import annotations

import functools
import hashlib
import json
import sqlite3
import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.documents import Document
from langgraph.cache.base import BaseCache
from langgraph.func import task
from langgraph.types import CachePolicy

from searchain_graph.ir.identity import component_key
from searchain_graph.ir.readers.base import ReaderOutput
from searchain_graph.method.calls import doc_dict
from searchain_graph.method.state import DocumentDict

__all__ = ["CachedIR", "IRCall", "cached_read", "cached_retrieve", "component_key", "open_cache"]


def open_cache(path: str | Path | None) -> BaseCache[Any] | None:
    """LangGraph's ``SqliteCache`` in the file ``path`` (its folder created), or None for no path.

    Raises:
        ValueError: ``path`` is a folder, or not an SQLite file.
    """
    if path is None:
        return None
    from langgraph.cache.sqlite import SqliteCache

    target = Path(path)
    if target.is_dir():
        raise ValueError(f"the cache must be a file, and {target} is a folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        return SqliteCache(path=str(target))
    except sqlite3.DatabaseError as exc:
        raise ValueError(f"{target} is not an SQLite cache file: {exc}") from exc


def unkeyed(component: Any) -> str:
    """A key for a component without a stable one: unique to this object, for the life of the graph."""
    return f"{type(component).__qualname__}:unkeyed:{uuid.uuid4().hex}"


@dataclass(eq=False)
class IRCall:
    """What a cached retrieval or reading needs beyond its key's inputs.

    Attributes:
        key: The component's identity (:func:`component_key`).
        call: ``(query) -> documents`` or ``(query, document) -> (g, f)``.
        misses: How many calls ran (not answered by the cache); added to from worker threads.
        notes: What the retrievals that ran converted in their passages' metadata
            (:func:`~searchain_graph.method.calls.doc_dict`).
    """

    key: str
    call: Callable[..., Any]
    misses: int = 0
    notes: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def ran(self) -> None:
        """Count one call that the cache did not answer."""
        with self._lock:
            self.misses += 1

    def __repr__(self) -> str:  # what a trace shows of the task's input
        return f"IRCall({self.key!r})"


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


def _retrieve_key(query: str, k: int | None, job: IRCall) -> str:
    return _digest("retrieve", job.key, query, k)


def _read_key(query: str, document: DocumentDict, job: IRCall) -> str:
    title = document.get("metadata", {}).get("title")
    return _digest("read", job.key, query, title if isinstance(title, str) else None, document["page_content"])


def _retrieve(query: str, k: int | None, job: IRCall) -> list[DocumentDict]:
    job.ran()
    docs: list[DocumentDict] = job.call(query)
    return docs


def _read(query: str, document: DocumentDict, job: IRCall) -> list[Any]:
    job.ran()
    answer, confidence = job.call(query, document)
    return [answer, confidence]


def _cached(func: Callable[..., Any], name: str, key: Callable[..., str]) -> Any:
    policy: Any = CachePolicy(key_func=key)  # LangGraph types key_func by the task's own signature
    return task(name=name, cache_policy=policy)(func)


cached_retrieve = _cached(_retrieve, "cached_retrieve", _retrieve_key)
"""Task ``(query, k, job) -> documents``: ``job.call(query)``'s documents as plain dicts, cached by
the retriever's key, the query and ``k``."""

cached_read = _cached(_read, "cached_read", _read_key)
"""Task ``(query, document, job) -> [g, f]``: ``job.call(query, document)``, cached by the reader's
key, the query and the passage's title and text."""


class CachedIR:
    """One driver's retriever and reader, called through :func:`cached_retrieve` and :func:`cached_read`.

    Each method starts the tasks of one request at once (they run in parallel, as LangGraph runs
    tasks) and returns their futures with the :class:`IRCall` that counts the misses; the driver
    waits for them (``result()``, or ``await`` in the async path) and counts the hits.
    """

    def __init__(self, retriever: Any, reader: Any) -> None:
        self._retriever, self._reader = retriever, reader

    # Computed on first use, not when the graph is built: a large index's digest reads all of it.
    @functools.cached_property
    def retriever_key(self) -> str:
        """The retriever's part of every retrieval's key."""
        return component_key(self._retriever) or unkeyed(self._retriever)

    @functools.cached_property
    def reader_key(self) -> str:
        """The reader's part of every reading's key."""
        return component_key(self._reader) or unkeyed(self._reader)

    def retrieve(
        self, queries: Sequence[str], k: int | None, fetch: Callable[[str], Sequence[Document]]
    ) -> tuple[list[Any], IRCall]:
        """Start a cached retrieval per query; ``fetch(query)`` runs on a miss."""
        job = IRCall(self.retriever_key, lambda query: [doc_dict(d, job.notes) for d in fetch(query)])
        return [cached_retrieve(query, k, job) for query in queries], job

    def read(
        self, pairs: Sequence[tuple[str, DocumentDict]], fetch: Callable[[str, DocumentDict], ReaderOutput]
    ) -> tuple[list[Any], IRCall]:
        """Start a cached reading per (query, document) pair; ``fetch(query, document)`` runs on a miss."""
        job = IRCall(self.reader_key, fetch)
        return [cached_read(query, document, job) for query, document in pairs], job

    @staticmethod
    def documents(found: Sequence[Sequence[DocumentDict]]) -> list[list[Document]]:
        """The tasks' plain documents as LangChain ``Document`` objects again."""
        return [
            [Document(page_content=d["page_content"], metadata=dict(d["metadata"])) for d in docs] for docs in found
        ]

    @staticmethod
    def outputs(read: Sequence[Sequence[Any]]) -> list[ReaderOutput]:
        """The tasks' ``[g, f]`` lists as :class:`ReaderOutput` again."""
        return [ReaderOutput(answer, confidence) for answer, confidence in read]
