"""The passage store beside an index: ``passages.jsonl`` and its byte offsets, read by seeking.

An index over millions of passages does not hold their text in memory: :class:`PassageStore`
reads passage ``i`` (the index's row ``i``, its ``pid``) with one ``pread``. The store is written
while the corpus streams into the indexer, one line per passage:
:func:`store_passages` (``(text, metadata)`` pairs, what an index build streams) and
:func:`write_passages` (LangChain ``Document`` objects).
"""

from __future__ import annotations

import json
import os
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, overload

import numpy as np
from langchain_core.documents import Document

from searchain_graph.ir.index_dir import load_array

__all__ = ["OFFSETS_FILE", "PASSAGES_FILE", "Passage", "PassageStore", "store_passages", "write_passages"]

PASSAGES_FILE = "passages.jsonl"
OFFSETS_FILE = "passages.offsets.npy"

Passage = tuple[str, dict[str, Any]]
"""A passage as an index build streams it: ``(text, metadata)``, lighter than a ``Document``."""

_quote = json.encoder.encode_basestring  # json.dumps' quoting (ensure_ascii=False), in C


def _store_line(text: str, metadata: Mapping[str, Any]) -> bytes:
    """A passage's line in ``passages.jsonl``: ``json.dumps({**metadata, "text": text}, ensure_ascii=False)``.

    Byte for byte: metadata of strings only (what corpus files give) is written by quoting
    each string with ``json``'s own C function, about twice as fast as encoding a dict.
    """
    parts = []
    for key, value in metadata.items():
        if type(key) is not str or type(value) is not str or key == "text":
            return (json.dumps({**metadata, "text": text}, ensure_ascii=False) + "\n").encode("utf-8")
        parts.append(f"{_quote(key)}: {_quote(value)}, ")
    return f'{{{"".join(parts)}"text": {_quote(text)}}}\n'.encode()


class _StoreWriter:
    """Appends passages to ``passages.jsonl``; the offsets file is written only when all went well."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self._offsets = array("q", [0])  # 8 bytes a passage (a list of ints takes about 36)
        self._handle = (self.directory / PASSAGES_FILE).open("wb")

    def add(self, text: str, metadata: Mapping[str, Any]) -> None:
        line = _store_line(text, metadata)
        self._handle.write(line)
        self._offsets.append(self._offsets[-1] + len(line))

    def __enter__(self) -> _StoreWriter:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self._handle.close()
        if kind is None:
            np.save(self.directory / OFFSETS_FILE, np.frombuffer(self._offsets, dtype=np.int64))


def store_passages(passages: Iterable[Passage], directory: str | Path) -> Iterator[Passage]:
    """Store ``(text, metadata)`` passages in ``directory`` as a :class:`PassageStore`, yielding each once written.

    A generator, so that a corpus streams from its file, into the store and into an
    indexer in one pass. The offsets file is written when the generator is exhausted.
    """
    with _StoreWriter(directory) as store:
        for text, metadata in passages:
            store.add(text, metadata)
            yield text, metadata


def write_passages(docs: Iterable[Document], directory: str | Path) -> Iterator[Document]:
    """:func:`store_passages` for ``Document`` objects: stores ``docs`` in ``directory``, yielding each one."""
    with _StoreWriter(directory) as store:
        for doc in docs:
            store.add(doc.page_content, doc.metadata)
            yield doc


class PassageStore(Sequence[Document]):
    """Passages kept on disk, read by position (``store[i]``) with one ``pread`` each.

    Thread-safe: reads use positional I/O on one shared descriptor.
    """

    def __init__(self, directory: str | Path) -> None:
        """Open the store in ``directory``.

        Raises:
            FileNotFoundError: ``directory`` holds no passage store.
        """
        self._fd = -1
        directory = Path(directory)
        path, offsets = directory / PASSAGES_FILE, directory / OFFSETS_FILE
        if not path.is_file() or not offsets.is_file():
            raise FileNotFoundError(f"no passages in {directory} (expected {PASSAGES_FILE} and {OFFSETS_FILE})")
        self._offsets = load_array(offsets, mmap=True)
        self._fd = os.open(path, os.O_RDONLY)

    def __len__(self) -> int:
        return int(self._offsets.shape[0]) - 1

    @overload
    def __getitem__(self, index: int) -> Document: ...

    @overload
    def __getitem__(self, index: slice) -> list[Document]: ...

    def __getitem__(self, index: int | slice) -> Document | list[Document]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"passage {index} out of range (store has {len(self)})")
        start, end = int(self._offsets[index]), int(self._offsets[index + 1])
        record = json.loads(os.pread(self._fd, end - start, start))
        return Document(page_content=record.pop("text"), metadata=record)

    def close(self) -> None:
        """Close the passages file (also done when the store is garbage-collected)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()
