"""Corpus files: reading passages in the common formats, and storing them beside an index.

Formats (one passage per line unless noted):

* JSONL ``{"id", "title", "text"}``; FlashRAG's ``{"id", "contents"}`` (title on the
  first line of ``contents``); ``{"title", "paragraph_text"}``;
* TSV in DPR's ``psgs_w100.tsv`` layout: ``id<TAB>text<TAB>title`` with a header;
* the paragraphs of a QA dataset file, one question per line (or a JSON array):
  IRCoT's processed format (``contexts``), MuSiQue (``paragraphs``), HotpotQA and
  2WikiMultihopQA raw (``context``: ``[title, [sentences]]`` pairs). Paragraphs are
  deduplicated by (title, text), which is the open-domain corpus IRCoT and SearChain
  evaluate on, and get a stable id derived from their content.

A line that cannot be read raises :class:`CorpusFormatError` naming the file and the
line number: nothing is dropped silently.

:class:`PassageStore` keeps an index's passages on disk (``passages.jsonl`` plus an
array of byte offsets) and reads a passage by seeking, so an index over millions of
passages does not hold their text in memory.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
from array import array
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import numpy as np
from langchain_core.documents import Document

from searchain_graph.ir.index_dir import load_array

MAX_LINE_BYTES = 8 * 1024 * 1024
"""A corpus or dataset line longer than this (8 MiB) is refused with its line number before it is
parsed, rather than read whole into memory: no passage or question record comes near it."""

PASSAGES_FILE = "passages.jsonl"
OFFSETS_FILE = "passages.offsets.npy"


class CorpusFormatError(ValueError):
    """A corpus file has a line that is not a passage; the message names file and line."""


def _passage_from_record(record: Any, where: str) -> Document:
    if not isinstance(record, dict):
        raise CorpusFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    title = record.get("title")
    text = record.get("text")
    if text is None:
        text = record.get("paragraph_text")
    if text is None and "contents" in record:
        contents = str(record["contents"])
        if title is None and "\n" in contents:
            first, _, rest = contents.partition("\n")
            title, text = first.strip().strip('"'), rest
        else:
            text = contents
    if text is None or not str(text).strip():
        raise CorpusFormatError(f"{where}: no passage text (expected a 'text', 'contents' or 'paragraph_text' field)")
    pid = record.get("id", record.get("_id"))
    metadata: dict[str, Any] = {"title": str(title or "")}
    if pid is not None:
        metadata["id"] = str(pid)
    return Document(page_content=" ".join(str(text).split()), metadata=metadata)


QA_PARAGRAPH_FIELDS = ("contexts", "paragraphs", "context")
"""Fields that mark a record as a QA dataset question carrying its paragraphs."""


def is_qa_record(record: Any) -> bool:
    """Whether ``record`` is a QA dataset question with paragraphs (rather than a passage)."""
    return isinstance(record, dict) and any(isinstance(record.get(field), list) for field in QA_PARAGRAPH_FIELDS)


def paragraph_id(title: str, text: str) -> str:
    """A stable id for a paragraph: the first 16 hex digits of SHA-1 over title and text."""
    return hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:16]


def qa_paragraphs(record: dict[str, Any], where: str) -> Iterator[Document]:
    """The paragraphs of one QA dataset record (IRCoT, MuSiQue, HotpotQA or 2Wiki format)."""
    for field in QA_PARAGRAPH_FIELDS:
        items = record.get(field)
        if isinstance(items, list):
            break
    else:
        raise CorpusFormatError(f"{where}: no paragraphs (expected one of {', '.join(QA_PARAGRAPH_FIELDS)})")
    for n, item in enumerate(items):
        if isinstance(item, dict):
            title, text = item.get("title", ""), item.get("paragraph_text", item.get("text"))
        elif isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
            title, text = item[0], " ".join(str(s).strip() for s in item[1])
        else:
            raise CorpusFormatError(f"{where}: {field}[{n}] is neither a paragraph object nor [title, sentences]")
        if not isinstance(text, str):
            raise CorpusFormatError(f"{where}: {field}[{n}] has no paragraph text")
        text = " ".join(text.split())
        if not text:
            continue
        title = " ".join(str(title or "").split())
        yield Document(page_content=text, metadata={"title": title, "id": paragraph_id(title, text)})


def iter_json_records(path: Path, *, error: type[ValueError] = CorpusFormatError) -> Iterator[tuple[Any, str, int]]:
    """Yield ``(record, where, number)`` from a JSONL file or a JSON array file.

    A file is read as one JSON array when its content starts with ``[`` and parses as a
    whole (never for a ``.jsonl`` suffix; always for ``.json``); otherwise as JSONL, blank
    lines skipped. ``where``
    is ``path:line`` (JSONL) or ``path: record N`` (array); ``number`` is the line number or
    the position from 1.

    Raises:
        error: invalid JSON, naming the line.
    """
    with path.open("rb") as handle:
        head = handle.read(4096).decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
        handle.seek(0)
        if path.suffix.lower() == ".json" and not head.startswith("["):
            raise error(f"{path}: a JSON file must hold an array of records")
        if head.startswith("[") and path.suffix.lower() != ".jsonl":
            try:
                records = json.loads(_utf8(handle.read(), f"{path}", error, bom=True))
            except json.JSONDecodeError as exc:
                if exc.msg != "Extra data":  # "Extra data": more values follow, so it is JSONL
                    raise error(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
                handle.seek(0)
            else:
                for n, record in enumerate(records, start=1):
                    yield record, f"{path}: record {n}", n
                return
        lineno = 0
        while raw := handle.readline(MAX_LINE_BYTES + 1):
            lineno += 1
            where = f"{path}:{lineno}"
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                raise error(f"{where}: line longer than {MAX_LINE_BYTES} bytes; is this a corpus file?")
            line = _utf8(raw, where, error, bom=lineno == 1)
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
            yield record, where, lineno


def _utf8(data: bytes, where: str, error: type[ValueError], *, bom: bool = False) -> str:
    """``data`` as text, or ``error`` naming where the bytes are not UTF-8."""
    try:
        return data.decode("utf-8-sig" if bom else "utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})") from exc


def iter_corpus(path: str | Path, *, seen: set[str] | None = None) -> Iterator[Document]:
    """Yield the passages of a corpus file, in file order.

    Args:
        path: A JSONL, JSON-array or TSV file (see the module docstring for the formats).
        seen: Paragraph ids already yielded (QA dataset files only), shared across files
            to deduplicate their union; a fresh set when omitted.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        CorpusFormatError: a line is not a passage (the message names the line).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    if path.suffix.lower() in {".tsv", ".tab"}:
        yield from _iter_tsv(path)
        return
    seen = set() if seen is None else seen
    for record, where, number in iter_json_records(path):
        if is_qa_record(record):
            for doc in qa_paragraphs(record, where):
                if doc.metadata["id"] not in seen:
                    seen.add(doc.metadata["id"])
                    yield doc
            continue
        doc = _passage_from_record(record, where)
        doc.metadata.setdefault("id", str(number))
        yield doc


def _iter_tsv(path: Path) -> Iterator[Document]:
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        header: list[str] | None = None
        rows = iter(reader)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                return
            except (UnicodeDecodeError, csv.Error) as exc:
                reason = "not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else f"not TSV ({exc})"
                raise CorpusFormatError(f"{path}:{reader.line_num + 1}: {reason}") from exc
            lineno = reader.line_num
            where = f"{path}:{lineno}"
            if header is None:
                header = [h.strip().lower() for h in row]
                if header[:2] != ["id", "text"]:
                    raise CorpusFormatError(f"{where}: expected a DPR header 'id<TAB>text<TAB>title', got {row[:3]!r}")
                continue
            if not row or all(not cell.strip() for cell in row):
                continue
            if len(row) != len(header):
                raise CorpusFormatError(f"{where}: expected {len(header)} tab-separated fields, got {len(row)}")
            yield _passage_from_record(dict(zip(header, row, strict=True)), where)


def iter_corpora(paths: str | Path | Sequence[str | Path]) -> Iterator[Document]:
    """Yield the passages of several corpus files in turn (QA paragraphs deduplicated across files)."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    seen: set[str] = set()
    for path in paths:
        yield from iter_corpus(path, seen=seen)


def load_corpus(paths: str | Path | Sequence[str | Path]) -> list[Document]:
    """Load one or more corpus files into a list of passages.

    Raises:
        FileNotFoundError: a file does not exist.
        CorpusFormatError: a line is not a passage, or the files hold no passage at all.
    """
    docs = list(iter_corpora(paths))
    if not docs:
        names = [paths] if isinstance(paths, (str, Path)) else paths
        raise CorpusFormatError(f"no passages in {', '.join(str(p) for p in names)}")
    return docs


def passage_text(doc: Document) -> str:
    r"""A passage as one string, ``"title\\ntext"`` (title omitted when empty): what the indexes encode.

    Readers get the title and the text apart
    (:func:`~searchain_graph.ir.readers.base.passage_of`); this string is what the old reader
    interface passed, and what an old-style reader still gets.
    """
    title = str(doc.metadata.get("title") or "").strip()
    return f"{title}\n{doc.page_content}" if title else doc.page_content


def scored_document(doc: Document, score: float, pid: int) -> Document:
    """``doc`` with a retriever's ``score`` and its ``pid`` (its row in the index) in the metadata."""
    return Document(page_content=doc.page_content, metadata={**doc.metadata, "score": score, "pid": pid})


def _record(doc: Document) -> dict[str, Any]:
    return {**doc.metadata, "text": doc.page_content}


def _document(record: dict[str, Any]) -> Document:
    text = record.pop("text")
    return Document(page_content=text, metadata=record)


def write_passages(docs: Iterable[Document], directory: str | Path) -> Iterator[Document]:
    """Store ``docs`` in ``directory`` as a :class:`PassageStore`, yielding each one once written.

    A generator, so that a corpus streams from its file, into the store and into an
    indexer in one pass. The offsets file is written when the generator is exhausted.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    offsets = array("q")  # 8 bytes a passage (a list of ints takes about 36)
    with (directory / PASSAGES_FILE).open("wb") as handle:
        position = 0
        for doc in docs:
            line = (json.dumps(_record(doc), ensure_ascii=False) + "\n").encode("utf-8")
            handle.write(line)
            offsets.append(position)
            position += len(line)
            yield doc
        offsets.append(position)
    np.save(directory / OFFSETS_FILE, np.frombuffer(offsets, dtype=np.int64))


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
        return _document(json.loads(os.pread(self._fd, end - start, start)))

    def close(self) -> None:
        """Close the passages file (also done when the store is garbage-collected)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __del__(self) -> None:
        self.close()
