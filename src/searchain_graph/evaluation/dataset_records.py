"""The :class:`Example` layout and the record readers and field checks every dataset parser shares.

The low layer of the dataset loaders: :mod:`~searchain_graph.evaluation.dataset_formats` parses
each dataset's native records with these helpers, and :mod:`~searchain_graph.evaluation.datasets`
(the public API, which re-exports the types, :data:`DATASETS`, :data:`TASKS` and
:class:`DatasetFormatError`) iterates over files with :func:`iter_records`. This module imports
neither of them.

* Types: :class:`Paragraph`, :class:`Step`, :class:`Example`; the registry :data:`DATASETS`
  and :data:`TASKS`; :class:`DatasetFormatError`.
* Reading: :func:`iter_records` yields ``(record, where, number)`` from a JSON array, JSONL or CSV
  file, ``where`` naming the file and line (or record) for error messages.
* Field checks: :func:`required_field`, :func:`text_field`, :func:`optional_text` (and
  :func:`optional_texts`),
  :func:`list_field`, :func:`identifier_field`, :func:`gold_answers` and the paragraph readers
  (:func:`paragraph_objects`, :func:`sentence_paragraphs`) raise :class:`DatasetFormatError`
  naming the record and field; text is whitespace-collapsed by :mod:`searchain_graph.ir.corpus`'s
  own ``collapse_whitespace``. :func:`make_example` builds the :class:`Example`;
  :func:`describe` quotes a value in a message, bounded.

A field that wants a string takes nothing else: a list, an object, a number or ``null`` there is
an error (``null`` means absent for an optional field), never text made from it. Numbers: JSON is
decoded by :mod:`searchain_graph.ir.json_records`, which refuses ``NaN``, ``Infinity``, ``1e400``
and integers of more than 4,300 digits (naming the field) and replaces lone surrogates by U+FFFD;
an id may be a JSON integer (kept as its digits) or a string (kept whatever its length); a
sentence index (``supporting_facts``) or a paragraph index (``paragraph_support_idx``) must be
an integer.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypedDict

from searchain_graph.ir.corpus import collapse_whitespace
from searchain_graph.ir.json_records import iter_json_records


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


# --- field access ------------------------------------------------------------------------------


def required_field(record: Mapping[str, Any], key: str, where: str) -> Any:
    """The value of ``record[key]``, whatever its type.

    Args:
        record: One record of a dataset file.
        key: The field.
        where: The record's place, for the error message.

    Raises:
        DatasetFormatError: the field is missing or ``null``.
    """
    if key not in record or record[key] is None:
        raise DatasetFormatError(f"{where}: missing field {key!r}")
    return record[key]


def text_field(record: Mapping[str, Any], key: str, where: str) -> str:
    """The string ``record[key]``, whitespace-collapsed.

    Args:
        record: One record of a dataset file.
        key: The field.
        where: The record's place, for the error message.

    Raises:
        DatasetFormatError: the field is missing, not a string, or blank.
    """
    value = required_field(record, key, where)
    if not isinstance(value, str):
        raise DatasetFormatError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
    value = collapse_whitespace(value)
    if not value:
        raise DatasetFormatError(f"{where}: field {key!r} is empty")
    return value


def optional_text(record: Mapping[str, Any], key: str, where: str) -> str | None:
    """The string ``record[key]`` as it is, or ``None`` when the field is absent or ``null``.

    For the fields kept in ``Example["meta"]`` (``type``, ``level``, ``term``...): a list or a number
    there is an error, never a value dropped or turned into text.

    Raises:
        DatasetFormatError: the field holds something other than a string.
    """
    value = record.get(key)
    if value is None or isinstance(value, str):
        return value
    raise DatasetFormatError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")


def optional_texts(record: Mapping[str, Any], keys: tuple[str, ...], where: str) -> dict[str, object]:
    """The fields of ``keys`` that ``record`` has as strings (:func:`optional_text`), for ``Example["meta"]``."""
    return {key: value for key in keys if (value := optional_text(record, key, where)) is not None}


def describe(value: Any) -> str:
    """``value`` for an error message: a short ``repr`` of a string, number or constant, else its type.

    A value read from a file may be a list nested thousands deep (``repr`` recurses) or a string
    of megabytes: neither belongs in a message.
    """
    if value is None or isinstance(value, (str, int, float)):
        text = repr(value) if not isinstance(value, int) or abs(value) < 10**40 else "a long integer"
        return text if len(text) <= 60 else text[:57] + "..."
    return f"a {type(value).__name__}"


def list_field(record: Mapping[str, Any], key: str, where: str) -> list[Any]:
    """The list ``record[key]`` (its items unchecked).

    Args:
        record: One record of a dataset file.
        key: The field.
        where: The record's place, for the error message.

    Raises:
        DatasetFormatError: the field is missing or not a list.
    """
    value = required_field(record, key, where)
    if not isinstance(value, list):
        raise DatasetFormatError(f"{where}: field {key!r} must be a list, got {type(value).__name__}")
    return value


def identifier_field(record: Mapping[str, Any], keys: tuple[str, ...], where: str, fallback: str | None = None) -> str:
    """The question id: the first of ``keys`` the record has, as a stripped string.

    Args:
        record: One record of a dataset file.
        keys: The fields that may hold the id, in order of preference.
        where: The record's place, for the error message.
        fallback: The id when the record has none of ``keys`` (``None``: that is an error).

    An integer id is kept as its digits (JSON gives at most 4,300 of them); a string id is kept
    whatever its length, as nothing computes with it.

    Raises:
        DatasetFormatError: the id is not a non-empty string or integer, or is missing
            and there is no ``fallback``.
    """
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


def gold_answers(first: str, aliases: Iterable[Any], where: str, key: str) -> list[str]:
    """``first`` then ``aliases``, whitespace-collapsed, deduplicated in order, empties dropped.

    Args:
        first: The gold answer (``""`` when the dataset gives only a list).
        aliases: Its aliases, or the list of answers.
        where: The record's place, for the error message.
        key: The field ``aliases`` came from, for the error message.

    Raises:
        DatasetFormatError: an alias is not a string, or no answer is left.
    """
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


def make_example(
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
    """An :class:`Example`, its ``task`` looked up in :data:`TASKS`.

    Args:
        dataset: The canonical dataset name.
        qid: The question id.
        question: The question (or claim).
        answers: The gold answers, the first one first.
        hops: The number of hops, ``None`` when the dataset does not say.
        paragraphs: The paragraphs given with the question (none: ``[]``).
        decomposition: The gold decomposition, if any.
        meta: Anything else the dataset gives (none: ``{}``).
    """
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


def paragraph_objects(items: list[Any], key: str, where: str) -> list[Paragraph]:
    """Paragraphs given as objects: ``{"title", "paragraph_text" (or "text"), "is_supporting"}``.

    Args:
        items: The field's list.
        key: The field, for the error message.
        where: The record's place, for the error message.

    Raises:
        DatasetFormatError: an item is not such an object.
    """
    out: list[Paragraph] = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            raise DatasetFormatError(f"{where}: {key}[{n}] must be an object, got {type(item).__name__}")
        title = item.get("title")
        text = item.get("paragraph_text", item.get("text"))
        supporting = item.get("is_supporting", False)
        if title is None:  # no title: an empty one, as IRCoT's files give some
            title = ""
        if not isinstance(title, str) or not isinstance(text, str):
            kinds = f"{type(title).__name__} and {type(text).__name__}"
            raise DatasetFormatError(f"{where}: {key}[{n}] needs a string 'title' and 'paragraph_text', got {kinds}")
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
        if (
            not isinstance(fact, list)
            or len(fact) != 2
            or not isinstance(fact[0], str)
            or not isinstance(fact[1], int)
            or isinstance(fact[1], bool)
            or fact[1] < 0
        ):
            raise DatasetFormatError(
                f"{where}: supporting_facts[{n}] must be [title, sentence index (an integer >= 0)]"
            )
        titles.add(collapse_whitespace(fact[0]))
    return titles


def sentence_paragraphs(record: Mapping[str, Any], where: str) -> list[Paragraph]:
    """HotpotQA/2Wiki ``context``: ``[title, [sentences]]`` pairs; supporting by ``supporting_facts`` title.

    Args:
        record: One HotpotQA or 2WikiMultihopQA record.
        where: The record's place, for the error message.

    Raises:
        DatasetFormatError: ``context`` or ``supporting_facts`` is missing or malformed.
    """
    supporting = _supporting_titles(record, where)
    out: list[Paragraph] = []
    for n, item in enumerate(list_field(record, "context", where)):
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
