r"""Corpus files: reading passages in the common formats, and storing them beside an index.

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
line number (and the field): nothing is dropped silently. Texts and titles must be strings
(``null`` is absent), never text made from a number or a list; an id is a string, kept whatever
its length, or a JSON integer, kept as its digits. JSON is decoded strictly by
:mod:`~searchain_graph.ir.json_records`: ``NaN``, ``Infinity``, ``1e400``, integers of more than
4,300 digits and nesting too deep to parse are format errors; lone surrogates (``"\ud800"``) are
replaced by U+FFFD, with one warning per file. A TSV file is read as strings: no number is made.

:class:`~searchain_graph.ir.passage_store.PassageStore` keeps an index's passages on disk
(re-exported here). An index build streams passages as ``(text, metadata)`` pairs
(:func:`iter_passages`), lighter than ``Document`` objects.
"""

from __future__ import annotations

import csv
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from searchain_graph.ir.json_records import MAX_LINE_BYTES, iter_json_records
from searchain_graph.ir.passage_store import OFFSETS_FILE, PASSAGES_FILE, Passage, PassageStore, write_passages

__all__ = [
    "MAX_LINE_BYTES",
    "OFFSETS_FILE",
    "PASSAGES_FILE",
    "CorpusFormatError",
    "Passage",
    "PassageStore",
    "collapse_whitespace",
    "iter_corpora",
    "iter_corpus",
    "iter_passages",
    "joined_text",
    "load_corpus",
    "passage_text",
    "write_passages",
]


class CorpusFormatError(ValueError):
    """A corpus file has a line that is not a passage; the message names file and line."""


_ASCII_WHITESPACE = ("\t", "\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f")
_WHITESPACE = (*_ASCII_WHITESPACE, "\x85", "\xa0", "\u1680", *map(chr, range(0x2000, 0x200B)))
_WHITESPACE += ("\u2028", "\u2029", "\u202f", "\u205f", "\u3000")  # all but " " that str.split() splits on


def collapse_whitespace(text: str) -> str:
    """``text`` with its whitespace runs as single spaces and none at the ends: ``" ".join(text.split())``.

    A text that is already so (most passages) is returned as it is, found with a few ``in``
    tests (C loops over the text) rather than split into words and joined again.
    """
    if "  " not in text and text[:1] != " " and text[-1:] != " ":
        for char in _ASCII_WHITESPACE if text.isascii() else _WHITESPACE:
            if char in text:
                break
        else:
            return text
    return " ".join(text.split())


def _string(record: Mapping[str, Any], key: str, where: str) -> str | None:
    """``record[key]`` when it is a string, ``None`` when it is absent or ``null``; else the format error."""
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    raise CorpusFormatError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")


def _title_and_text(record: Mapping[str, Any], where: str) -> tuple[str | None, str | None]:
    """The title and the text of a record whose ``title`` or ``text`` is not a string (absent, say)."""
    title = _string(record, "title", where)
    text = _string(record, "text", where)
    if text is None:
        text = _string(record, "paragraph_text", where)
    if text is None:
        contents = _string(record, "contents", where)
        if contents is not None and title is None and "\n" in contents:
            first, _, rest = contents.partition("\n")
            title, text = first.strip().strip('"'), rest
        else:
            text = contents
    return title, text


def _passage_from_record(record: Any, where: str) -> Passage:
    """A passage from a JSON object or a TSV row.

    ``text`` (or ``paragraph_text``, or ``contents``) and ``title`` must be strings (``null``: absent);
    the id (``id``, else ``_id``) a string, kept whatever its length, or an integer, kept as its
    digits (a JSON integer has at most 4,300 of them, see :mod:`~searchain_graph.ir.json_records`).
    Anything else is a :class:`CorpusFormatError` naming the field rather than text made from it.
    """
    if not isinstance(record, dict):
        raise CorpusFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
    title, text = record.get("title"), record.get("text")
    if type(title) is not str or type(text) is not str:  # most passages have both
        title, text = _title_and_text(record, where)
    text = collapse_whitespace(text or "")
    if not text:
        raise CorpusFormatError(f"{where}: no passage text (expected a 'text', 'contents' or 'paragraph_text' field)")
    metadata: dict[str, Any] = {"title": title or ""}
    pid = record.get("id")
    if type(pid) is str:
        metadata["id"] = pid
        return text, metadata
    key = "id" if "id" in record else "_id"
    pid = record.get(key)
    if isinstance(pid, str):
        metadata["id"] = pid
    elif isinstance(pid, int) and not isinstance(pid, bool):
        metadata["id"] = str(pid)
    elif pid is not None:
        raise CorpusFormatError(f"{where}: field {key!r} must be a string or an integer, got {type(pid).__name__}")
    return text, metadata


QA_PARAGRAPH_FIELDS = ("contexts", "paragraphs", "context")
"""Fields that mark a record as a QA dataset question carrying its paragraphs."""
_QA_FIELDS = frozenset(QA_PARAGRAPH_FIELDS)


def _context_columns(value: Any) -> bool:
    """Whether ``value`` is a ``context`` in ``datasets``' layout: ``{"title": [...], "sentences": [...]}``."""
    return isinstance(value, dict) and isinstance(value.get("title"), list) and isinstance(value.get("sentences"), list)


def is_qa_record(record: Any) -> bool:
    """Whether ``record`` is a QA dataset question with paragraphs (rather than a passage)."""
    if not isinstance(record, dict) or _QA_FIELDS.isdisjoint(record):  # a passage: no field to look at
        return False
    return any(isinstance(record.get(field), list) for field in QA_PARAGRAPH_FIELDS) or _context_columns(
        record.get("context")
    )


def paragraph_id(title: str, text: str) -> str:
    """A stable id for a paragraph: the first 16 hex digits of SHA-1 over title and text."""
    return hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:16]


def qa_paragraphs(record: dict[str, Any], where: str) -> Iterator[Document]:
    """The paragraphs of one QA dataset record (IRCoT, MuSiQue, HotpotQA or 2Wiki format, or ``datasets``')."""
    context: Any = record.get("context")
    if _context_columns(context):
        if len(context["title"]) != len(context["sentences"]):
            raise CorpusFormatError(f"{where}: context's 'title' and 'sentences' are of different lengths")
        record = {
            **record,
            "context": [list(pair) for pair in zip(context["title"], context["sentences"], strict=True)],
        }
    for field in QA_PARAGRAPH_FIELDS:
        items = record.get(field)
        if isinstance(items, list):
            break
    else:
        raise CorpusFormatError(f"{where}: no paragraphs (expected one of {', '.join(QA_PARAGRAPH_FIELDS)})")
    for n, item in enumerate(items):
        if isinstance(item, dict):
            title, text = item.get("title"), item.get("paragraph_text", item.get("text"))
        elif isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
            title, text = item[0], item[1]
            for k, sentence in enumerate(text):
                if not isinstance(sentence, str):
                    kind = type(sentence).__name__
                    raise CorpusFormatError(f"{where}: {field}[{n}][1][{k}] must be a sentence (a string), got {kind}")
            text = " ".join(s.strip() for s in text)
        else:
            raise CorpusFormatError(f"{where}: {field}[{n}] is neither a paragraph object nor [title, sentences]")
        if not isinstance(text, str):
            raise CorpusFormatError(f"{where}: {field}[{n}] has no paragraph text (a string)")
        if title is not None and not isinstance(title, str):
            raise CorpusFormatError(f"{where}: {field}[{n}] has a title that is not a string ({type(title).__name__})")
        text = collapse_whitespace(text)
        if not text:
            continue
        title = collapse_whitespace(title or "")
        yield Document(page_content=text, metadata={"title": title, "id": paragraph_id(title, text)})


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
    for text, metadata in _file_passages(Path(path), set() if seen is None else seen):
        yield Document(page_content=text, metadata=metadata)


def _file_passages(path: Path, seen: set[str]) -> Iterator[Passage]:
    """:func:`iter_corpus` as ``(text, metadata)`` pairs."""
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    if path.suffix.lower() in {".tsv", ".tab"}:
        yield from _iter_tsv(path)
        return
    for record, where, number in iter_json_records(path, error=CorpusFormatError):
        if is_qa_record(record):
            for doc in qa_paragraphs(record, where):
                if doc.metadata["id"] not in seen:
                    seen.add(doc.metadata["id"])
                    yield doc.page_content, doc.metadata
            continue
        text, metadata = _passage_from_record(record, where)
        metadata.setdefault("id", str(number))
        yield text, metadata


def _iter_tsv(path: Path) -> Iterator[Passage]:
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


def iter_passages(paths: str | Path | Sequence[str | Path]) -> Iterator[Passage]:
    """The passages of several corpus files in turn, as ``(text, metadata)`` pairs (what an index build streams).

    QA paragraphs are deduplicated across the files, as in :func:`iter_corpora`.
    """
    seen: set[str] = set()
    for path in [paths] if isinstance(paths, (str, Path)) else paths:
        yield from _file_passages(Path(path), seen)


def iter_corpora(paths: str | Path | Sequence[str | Path]) -> Iterator[Document]:
    """Yield the passages of several corpus files in turn (QA paragraphs deduplicated across files)."""
    for text, metadata in iter_passages(paths):
        yield Document(page_content=text, metadata=metadata)


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
    return joined_text(doc.page_content, doc.metadata)


def joined_text(text: str, metadata: Mapping[str, Any]) -> str:
    """:func:`passage_text` of a ``(text, metadata)`` passage."""
    title = metadata.get("title")
    if type(title) is not str:
        title = str(title or "")
    title = title.strip()
    return f"{title}\n{text}" if title else text


def scored_document(doc: Document, score: float, pid: int) -> Document:
    """``doc`` with a retriever's ``score`` and its ``pid`` (its row in the index) in the metadata."""
    return Document(page_content=doc.page_content, metadata={**doc.metadata, "score": score, "pid": pid})
