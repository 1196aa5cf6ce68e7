"""The :class:`Example` layout and the record readers and field checks every dataset parser shares.

The low layer of the dataset loaders: :mod:`~searchain_graph.evaluation.dataset_formats` parses
each dataset's native records with these helpers, and :mod:`~searchain_graph.evaluation.datasets`
(the public API, which re-exports the types, :data:`DATASETS`, :data:`TASKS` and
:class:`DatasetFormatError`) iterates over files with :func:`_records`. This module imports
neither of them.

* Types: :class:`Paragraph`, :class:`Step`, :class:`Example`; the registry :data:`DATASETS`
  and :data:`TASKS`; :class:`DatasetFormatError`.
* Reading: :func:`_records` yields ``(record, where, number)`` from a JSON array, JSONL or CSV
  file, ``where`` naming the file and line (or record) for error messages.
* Field checks: :func:`_text`, :func:`_list`, :func:`_identifier`, :func:`_answers` and the
  paragraph readers raise :class:`DatasetFormatError` naming the record and field; text is
  whitespace-collapsed by :mod:`searchain_graph.ir.corpus`'s own ``collapse_whitespace``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypedDict

from searchain_graph.ir.corpus import collapse_whitespace, iter_json_records


class Paragraph(TypedDict):
    """A paragraph given with a question."""

    title: str
    text: str
    is_supporting: bool


class Step(TypedDict):
    """One step of a gold decomposition (``answer`` is ``""`` when the dataset gives none)."""

    question: str
    answer: str


class Example(TypedDict):
    """One evaluation question, whatever the dataset."""

    qid: str
    dataset: str
    question: str
    answers: list[str]
    task: str
    hops: int | None
    paragraphs: list[Paragraph]
    decomposition: list[Step] | None
    meta: dict[str, object]


DATASETS: tuple[str, ...] = ("hotpotqa", "musique", "2wikimultihopqa", "strategyqa", "fever", "eli5", "bamboogle")
"""The canonical dataset names, as stored in ``Example["dataset"]``."""

TASKS: dict[str, str] = {
    "hotpotqa": "multihop",
    "musique": "multihop",
    "2wikimultihopqa": "multihop",
    "bamboogle": "multihop",
    "strategyqa": "yesno",
    "fever": "fact",
    "eli5": "longform",
}
"""The graph's task name for each dataset."""


class DatasetFormatError(ValueError):
    """A dataset file has a record that cannot be read; the message names file and line (or record)."""


# --- reading records ---------------------------------------------------------------------------


def _records(path: Path) -> Iterator[tuple[Any, str, int]]:
    """Yield ``(record, where, number)`` with ``number`` the record's position from 1.

    ``where`` is ``path:line`` for JSONL and CSV, ``path: record N`` for a JSON array.
    """
    if path.suffix.lower() == ".csv":
        yield from _csv_records(path)
        return
    yield from iter_json_records(path, error=DatasetFormatError)


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


# --- field access ------------------------------------------------------------------------------


def _field(record: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in record or record[key] is None:
        raise DatasetFormatError(f"{where}: missing field {key!r}")
    return record[key]


def _text(record: Mapping[str, Any], key: str, where: str) -> str:
    value = _field(record, key, where)
    if not isinstance(value, str):
        raise DatasetFormatError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
    value = collapse_whitespace(value)
    if not value:
        raise DatasetFormatError(f"{where}: field {key!r} is empty")
    return value


def _list(record: Mapping[str, Any], key: str, where: str) -> list[Any]:
    value = _field(record, key, where)
    if not isinstance(value, list):
        raise DatasetFormatError(f"{where}: field {key!r} must be a list, got {type(value).__name__}")
    return value


def _identifier(record: Mapping[str, Any], keys: tuple[str, ...], where: str, fallback: str | None = None) -> str:
    for key in keys:
        value = record.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
            raise DatasetFormatError(f"{where}: field {key!r} must be a non-empty string or integer")
        return str(value).strip()
    if fallback is not None:
        return fallback
    raise DatasetFormatError(f"{where}: missing field {keys[0]!r} (the question id)")


def _answers(first: str, aliases: Iterable[Any], where: str, key: str) -> list[str]:
    """``first`` then ``aliases``, whitespace-collapsed, deduplicated in order, empties dropped."""
    out = [first] if first else []
    for n, alias in enumerate(aliases):
        if not isinstance(alias, str):
            raise DatasetFormatError(f"{where}: {key}[{n}] must be a string, got {type(alias).__name__}")
        alias = collapse_whitespace(alias)
        if alias and alias not in out:
            out.append(alias)
    if not out:
        raise DatasetFormatError(f"{where}: no gold answer")
    return out


def _example(
    dataset: str,
    qid: str,
    question: str,
    answers: list[str],
    *,
    hops: int | None,
    paragraphs: list[Paragraph] | None = None,
    decomposition: list[Step] | None = None,
    meta: dict[str, object] | None = None,
) -> Example:
    return {
        "qid": qid,
        "dataset": dataset,
        "question": question,
        "answers": answers,
        "task": TASKS[dataset],
        "hops": hops,
        "paragraphs": paragraphs or [],
        "decomposition": decomposition,
        "meta": meta or {},
    }


def _paragraph_objects(items: list[Any], key: str, where: str) -> list[Paragraph]:
    """Paragraphs given as objects: ``{"title", "paragraph_text" (or "text"), "is_supporting"}``."""
    out: list[Paragraph] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise DatasetFormatError(f"{where}: {key}[{n}] must be an object, got {type(item).__name__}")
        title = item.get("title") or ""
        text = item.get("paragraph_text", item.get("text"))
        supporting = item.get("is_supporting", False)
        if not isinstance(title, str) or not isinstance(text, str):
            raise DatasetFormatError(f"{where}: {key}[{n}] needs a string 'title' and 'paragraph_text'")
        if not isinstance(supporting, bool):
            raise DatasetFormatError(f"{where}: {key}[{n}].is_supporting must be true or false")
        title, text = collapse_whitespace(title), collapse_whitespace(text)
        out.append({"title": title, "text": text, "is_supporting": supporting})
    return out


def _supporting_titles(record: Mapping[str, Any], where: str) -> set[str]:
    facts = record.get("supporting_facts") or []
    if not isinstance(facts, list):
        raise DatasetFormatError(f"{where}: field 'supporting_facts' must be a list")
    titles = set()
    for n, fact in enumerate(facts):
        if not isinstance(fact, list) or len(fact) != 2 or not isinstance(fact[0], str):
            raise DatasetFormatError(f"{where}: supporting_facts[{n}] must be [title, sentence index]")
        titles.add(collapse_whitespace(fact[0]))
    return titles


def _sentence_paragraphs(record: Mapping[str, Any], where: str) -> list[Paragraph]:
    """HotpotQA/2Wiki ``context``: ``[title, [sentences]]`` pairs; supporting by ``supporting_facts`` title."""
    supporting = _supporting_titles(record, where)
    out: list[Paragraph] = []
    for n, item in enumerate(_list(record, "context", where)):
        if (
            not isinstance(item, list)
            or len(item) != 2
            or not isinstance(item[0], str)
            or not isinstance(item[1], list)
            or not all(isinstance(s, str) for s in item[1])
        ):
            raise DatasetFormatError(f"{where}: context[{n}] must be [title, [sentences]]")
        title = collapse_whitespace(item[0])
        text = collapse_whitespace(" ".join(s.strip() for s in item[1]))
        out.append({"title": title, "text": text, "is_supporting": title in supporting})
    return out
