"""Loading a dataset file: its records read, parsed and checked, in order; and the corpus of its paragraphs.

:func:`load_dataset` and :func:`iter_dataset` read a file in its dataset's native format (named,
or detected by :func:`detect_dataset` from the fields of its first record) into
:class:`~searchain_graph.evaluation.datasets.Example` records, each parsed by
:mod:`~searchain_graph.evaluation.dataset_formats`. :func:`corpus_paragraphs` gives the
open-domain corpus of a file's questions.

Whether a file is a JSON array or JSONL is decided by its content, not by its suffix: a
file that parses as one JSON array is an array, anything else is JSONL; a ``.csv`` file is
read as CSV.

Identifiers: a file with two questions under one id is an error, since an evaluation run keys its
records by id.

Errors: a record that cannot be read (invalid JSON, no question, no answer, a field of
the wrong type) raises :class:`~searchain_graph.evaluation.datasets.DatasetFormatError` naming the
file and line (``path:12``) or, in a JSON array, the record (``path: record 12``), and the field.
Nothing is skipped silently, and no text is made from a number, a list or an object. JSON is
read strictly (:mod:`searchain_graph.ir.json_records`): ``NaN``, ``Infinity``, ``1e400``, an
integer of more than 4,300 digits (a long id must be a string, which is kept whatever its length)
and nesting too deep to parse are errors; lone surrogates (U+D800..U+DFFF, from JSON escapes) are
replaced by U+FFFD, with one warning per file.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from searchain_graph.evaluation.dataset_formats import PARSERS, describe, detect_record
from searchain_graph.evaluation.datasets import DATASETS, DatasetFormatError, Example, canonical_name
from searchain_graph.ir.corpus import paragraph_id
from searchain_graph.ir.json_records import iter_json_records

__all__ = ["corpus_paragraphs", "detect_dataset", "iter_dataset", "iter_records", "load_dataset"]


# --- reading records ---------------------------------------------------------------------------


def iter_records(path: Path, *, warn: bool = True) -> Iterator[tuple[Any, str, int]]:
    """Yield ``(record, where, number)`` with ``number`` the record's position from 1.

    ``where`` is ``path:line`` for JSONL and CSV, ``path: record N`` for a JSON array.

    Args:
        path: A JSON array, JSONL or (by its ``.csv`` suffix) CSV file.
        warn: Warn when lone surrogates are replaced (once per file); ``False`` for a first
            look at a file that is read again.

    Yields:
        Each record (a CSV row as a dict of its header's fields, blank rows skipped), where
        it is, and its number.

    Raises:
        DatasetFormatError: a JSON(L) file is not valid UTF-8 or JSON, or a CSV row has more fields
            than the header.
    """
    if path.suffix.lower() == ".csv":
        yield from _csv_records(path)
        return
    yield from iter_json_records(path, error=DatasetFormatError, warn=warn)


def _csv_records(path: Path) -> Iterator[tuple[Any, str, int]]:
    with path.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle)
        number = 0
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row:
                raise DatasetFormatError(f"{where}: more fields than the header has")
            if all(not (value or "").strip() for value in row.values()):
                continue
            number += 1
            yield {key.strip(): value for key, value in row.items() if key is not None}, where, number


# --- loading a dataset file --------------------------------------------------------------------


def _check_path(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    return path


def iter_dataset(name: str, path: str | Path) -> Iterator[Example]:
    """Yield the questions of a dataset file, in file order (JSONL is streamed).

    Args:
        name: The dataset (a name or alias from :data:`ALIASES`, case-insensitive), or
            ``"auto"`` to detect it with :func:`detect_dataset`.
        path: The file, in the dataset's native format.

    Raises:
        ValueError: ``name`` is not a known dataset.
        FileNotFoundError: ``path`` does not exist.
        DatasetFormatError: a record cannot be read, or two records share an id.
    """
    path = _check_path(path)
    dataset = detect_dataset(path) if name.strip().lower() == "auto" else canonical_name(name)
    parse = PARSERS[dataset]
    seen: dict[str, str] = {}
    for record, where, number in iter_records(path):
        if not isinstance(record, dict):
            raise DatasetFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
        example = parse(record, where, number)
        if example["qid"] in seen:
            qid = describe(example["qid"])
            raise DatasetFormatError(f"{where}: question id {qid} already used at {seen[example['qid']]}")
        seen[example["qid"]] = where
        yield example


def load_dataset(name: str, path: str | Path, *, limit: int | None = None) -> list[Example]:
    """Load the questions of a dataset file (see :func:`iter_dataset`).

    Args:
        name: The dataset name or alias, or ``"auto"``.
        path: The file, in the dataset's native format.
        limit: Keep only the first ``limit`` questions (the rest of the file is not read).

    Raises:
        ValueError: unknown ``name``, or a negative ``limit``.
        FileNotFoundError: ``path`` does not exist.
        DatasetFormatError: a record cannot be read.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return list(islice(iter_dataset(name, path), limit))


def detect_dataset(path: str | Path) -> str:
    """Which dataset a file holds, judged by the fields of its first record.

    IRCoT's processed files all share one layout: a question id with an ``Nhop`` prefix
    means MuSiQue, a 2Wiki question ``type`` means 2WikiMultihopQA, anything else HotpotQA.

    Returns:
        The canonical dataset name.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        DatasetFormatError: the file is empty, its first record cannot be read, or its
            fields match no known dataset.
    """
    path = _check_path(path)
    for record, where, _ in iter_records(path, warn=False):  # iter_dataset warns when it reads the file
        if not isinstance(record, dict):
            raise DatasetFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
        dataset = detect_record(record)
        if dataset is None:
            fields = ", ".join(key if len(key) <= 40 else key[:37] + "..." for key in sorted(record)[:12])
            raise DatasetFormatError(f"{where}: fields ({fields}) match no known dataset ({', '.join(DATASETS)})")
        return dataset
    raise DatasetFormatError(f"{path}: no records")


def corpus_paragraphs(examples: Iterable[Example]) -> list[Document]:
    """The open-domain corpus: the union of the questions' paragraphs, as IRCoT and SearChain use it.

    Paragraphs are deduplicated by (title, text) in first-seen order and paragraphs with
    empty text are dropped, as :func:`searchain_graph.ir.corpus.iter_corpus` does, so the ids
    equal those that ``searchain index`` gives the same QA file.

    Returns:
        Documents with the paragraph text and metadata ``{"title", "id"}``, ``id`` being
        :func:`searchain_graph.ir.corpus.paragraph_id` of title and text.
    """
    docs: list[Document] = []
    seen: set[str] = set()
    for example in examples:
        for paragraph in example["paragraphs"]:
            title, text = paragraph["title"], paragraph["text"]
            if not text:
                continue
            pid = paragraph_id(title, text)
            if pid not in seen:
                seen.add(pid)
                docs.append(Document(page_content=text, metadata={"title": title, "id": pid}))
    return docs
