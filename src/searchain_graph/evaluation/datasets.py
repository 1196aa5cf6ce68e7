"""Evaluation datasets in their native formats, read into one :class:`Example` layout.

Each loader reads the file as its authors distribute it, so code written against the
development samples also works on the full downloads:

==================  ==============================================================  =========
dataset             native format (one question per line, or a JSON array)          task
==================  ==============================================================  =========
``hotpotqa``        raw (``hotpot_dev_distractor_v1.json``: ``_id``, ``question``,   multihop
                    ``answer``, ``type``, ``level``, ``context``, ``supporting_facts``)
                    or IRCoT's processed JSONL (``question_id``, ``question_text``,
                    ``answers_objects[].spans``, ``contexts[]``)
``musique``         MuSiQue JSONL (``id``, ``question``, ``answer``,                 multihop
                    ``answer_aliases``, ``paragraphs``, ``question_decomposition``);
                    IRCoT's processed layout is accepted too
``2wikimultihopqa`` raw (``_id``, ``question``, ``answer``, ``type``, ``context``,      multihop
                    ``supporting_facts``, ``evidences``); IRCoT's layout too
``strategyqa``      official (``qid``, ``question``, ``answer`` bool, ``facts``,      yesno
                    ``decomposition``, ``evidence``)
``fever``           FEVER JSONL (``id``, ``claim``, ``label``, ``evidence``); KILT's  fact
                    ``input``/``output[].answer`` layout too
``eli5``            KILT JSONL (``id``, ``input``, ``output[].answer``) or the Hugging   longform
                    Face ``eli5`` layout (``q_id``, ``title``, ``answers.text``)
``bamboogle``       ``Question``, ``Answer``, ``Q1``, ``A1``, ``Q2``, ``A2`` as a JSON   multihop
                    array, JSONL or CSV with that header (``A1``/``A2`` a string or a
                    list of strings)
==================  ==============================================================  =========

Whether a file is a JSON array or JSONL is decided by its content, not by its suffix: a
file that parses as one JSON array is an array, anything else is JSONL; a ``.csv`` file is
read as CSV.

Normalisation: question and answer strings have their whitespace collapsed
(``" ".join(text.split())``); so have paragraph titles and texts, and HotpotQA/2Wiki
sentences are stripped and joined with one space, exactly as :mod:`searchain_graph.ir.corpus`
does, so that :func:`corpus_paragraphs` gives the same ids as ``searchain index`` run on
the same QA file. ``answers`` holds the gold answer first and then its aliases,
deduplicated in order, empty strings dropped. A question's paragraphs are kept as the file
lists them (duplicates included); :func:`corpus_paragraphs` deduplicates their union.

Hops (``Example["hops"]``):

* HotpotQA: 2 (every question is a two-paragraph bridge or comparison question).
* MuSiQue: the number of steps in ``question_decomposition``; IRCoT's layout: the
  ``Nhop`` prefix of the question id.
* 2WikiMultihopQA: by ``type``: ``comparison``, ``inference`` and ``compositional`` are 2,
  ``bridge_comparison`` is 4 (two bridges, then a comparison). The type rule is used
  rather than ``len(evidences)`` because some comparison questions carry a third,
  redundant evidence triple; ``len(evidences)`` is the fallback for an unknown type, and
  ``None`` when there are no evidences either.
* StrategyQA: the number of steps in ``decomposition``.
* Bamboogle: 2. FEVER and ELI5: ``None``.

Decompositions: MuSiQue's sub-questions with their ``#k`` references replaced by the
answer of step *k* (the unresolved questions stay in ``meta["raw_decomposition"]``);
Bamboogle's ``Q1``/``A1``, ``Q2``/``A2`` (the first of each list of sub-answers; all of
them in ``meta["step_answers"]``); StrategyQA's sub-questions with empty answers (their
``#k`` references cannot be resolved).

Identifiers: the dataset's own (``_id``, ``question_id``, ``id``, ``qid``, ``q_id``, as a
string); Bamboogle has none, so its questions are ``bamboogle-N`` by position in the file
(from 1) unless a record carries an ``id`` or ``qid``. A file with two questions under one
id is an error, since an evaluation run keys its records by id.

Errors: a record that cannot be read (invalid JSON, no question, no answer, a field of
the wrong type) raises :class:`DatasetFormatError` naming the file and line (``path:12``)
or, in a JSON array, the record (``path: record 12``). Nothing is skipped silently.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from pathlib import Path
from typing import Any, TypedDict

from langchain_core.documents import Document

from searchain_graph.ir.corpus import iter_json_records, paragraph_id


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

ALIASES: dict[str, str] = {
    "hotpot": "hotpotqa",
    "hotpotqa": "hotpotqa",
    "2wiki": "2wikimultihopqa",
    "2wikimultihopqa": "2wikimultihopqa",
    "musique": "musique",
    "strategyqa": "strategyqa",
    "fever": "fever",
    "eli5": "eli5",
    "bamboogle": "bamboogle",
}
"""Accepted names (lower case) and the canonical name each stands for."""

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")

TWOWIKI_HOPS: dict[str, int] = {"comparison": 2, "inference": 2, "compositional": 2, "bridge_comparison": 4}
"""Hops of a 2WikiMultihopQA question by its ``type``."""

_REFERENCE = re.compile(r"#(\d+)")
_MUSIQUE_HOPS = re.compile(r"^(\d+)hop")


class DatasetFormatError(ValueError):
    """A dataset file has a record that cannot be read; the message names file and line (or record)."""


def canonical_name(name: str) -> str:
    """The canonical dataset name for ``name`` (see :data:`ALIASES`; case-insensitive).

    Raises:
        ValueError: ``name`` is not a known dataset.
    """
    key = name.strip().lower()
    if key not in ALIASES:
        raise ValueError(f"unknown dataset {name!r}; expected one of {', '.join(sorted(ALIASES))} (or 'auto')")
    return ALIASES[key]


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


def _clean(text: str) -> str:
    return " ".join(text.split())


def _field(record: Mapping[str, Any], key: str, where: str) -> Any:
    if key not in record or record[key] is None:
        raise DatasetFormatError(f"{where}: missing field {key!r}")
    return record[key]


def _text(record: Mapping[str, Any], key: str, where: str) -> str:
    value = _field(record, key, where)
    if not isinstance(value, str):
        raise DatasetFormatError(f"{where}: field {key!r} must be a string, got {type(value).__name__}")
    value = _clean(value)
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
        alias = _clean(alias)
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
        out.append({"title": _clean(title), "text": _clean(text), "is_supporting": supporting})
    return out


def _supporting_titles(record: Mapping[str, Any], where: str) -> set[str]:
    facts = record.get("supporting_facts") or []
    if not isinstance(facts, list):
        raise DatasetFormatError(f"{where}: field 'supporting_facts' must be a list")
    titles = set()
    for n, fact in enumerate(facts):
        if not isinstance(fact, list) or len(fact) != 2 or not isinstance(fact[0], str):
            raise DatasetFormatError(f"{where}: supporting_facts[{n}] must be [title, sentence index]")
        titles.add(_clean(fact[0]))
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
        title = _clean(item[0])
        text = _clean(" ".join(s.strip() for s in item[1]))
        out.append({"title": title, "text": text, "is_supporting": title in supporting})
    return out


# --- one parser per format ---------------------------------------------------------------------


def _ircot(dataset: str, record: Mapping[str, Any], where: str) -> Example:
    """IRCoT's processed layout, shared by its HotpotQA, MuSiQue and 2Wiki files."""
    qid = _identifier(record, ("question_id",), where)
    question = _text(record, "question_text", where)
    spans: list[Any] = []
    for n, obj in enumerate(_list(record, "answers_objects", where)):
        if not isinstance(obj, dict):
            raise DatasetFormatError(f"{where}: answers_objects[{n}] must be an object")
        obj_spans = obj.get("spans") or []
        if not isinstance(obj_spans, list):
            raise DatasetFormatError(f"{where}: answers_objects[{n}].spans must be a list")
        spans.extend(obj_spans)
        number = obj.get("number")
        if not obj_spans and isinstance(number, (str, int, float)) and str(number).strip():
            spans.append(str(number))
    answers = _answers("", spans, where, "answers_objects.spans")
    paragraphs = _paragraph_objects(_list(record, "contexts", where), "contexts", where)
    meta: dict[str, object] = {k: record[k] for k in ("type", "level") if isinstance(record.get(k), str)}
    hops: int | None = None
    if dataset == "hotpotqa":
        hops = 2
    elif dataset == "musique":
        match = _MUSIQUE_HOPS.match(qid)
        hops = int(match.group(1)) if match else None
    elif dataset == "2wikimultihopqa":
        hops = TWOWIKI_HOPS.get(str(record.get("type")))
    return _example(dataset, qid, question, answers, hops=hops, paragraphs=paragraphs, meta=meta)


def _hotpotqa(record: Mapping[str, Any], where: str, number: int) -> Example:
    if "question_text" in record:
        return _ircot("hotpotqa", record, where)
    qid = _identifier(record, ("_id", "id"), where)
    question = _text(record, "question", where)
    answers = _answers(_text(record, "answer", where), [], where, "answer")
    paragraphs = _sentence_paragraphs(record, where)
    meta: dict[str, object] = {k: record[k] for k in ("type", "level") if isinstance(record.get(k), str)}
    meta["supporting_facts"] = record.get("supporting_facts") or []
    return _example("hotpotqa", qid, question, answers, hops=2, paragraphs=paragraphs, meta=meta)


def _resolve_references(question: str, answers: list[str], step: int, where: str) -> str:
    """Replace ``#k`` in step ``step``'s question (from 1) by the answer of an earlier step ``k``."""

    def answer(match: re.Match[str]) -> str:
        k = int(match.group(1))
        if not 1 <= k < step:
            raise DatasetFormatError(
                f"{where}: question_decomposition[{step - 1}] refers to #{k}, which is not an earlier step"
            )
        return answers[k - 1]

    return _REFERENCE.sub(answer, question)


def _musique(record: Mapping[str, Any], where: str, number: int) -> Example:
    if "question_text" in record:
        return _ircot("musique", record, where)
    qid = _identifier(record, ("id",), where)
    question = _text(record, "question", where)
    aliases = record.get("answer_aliases") or []
    if not isinstance(aliases, list):
        raise DatasetFormatError(f"{where}: field 'answer_aliases' must be a list")
    answers = _answers(_text(record, "answer", where), aliases, where, "answer_aliases")
    paragraphs = _paragraph_objects(_list(record, "paragraphs", where), "paragraphs", where)
    steps: list[Step] = []
    raw: list[str] = []
    support: list[object] = []
    for n, item in enumerate(_list(record, "question_decomposition", where)):
        if not isinstance(item, dict):
            raise DatasetFormatError(f"{where}: question_decomposition[{n}] must be an object")
        sub_where = f"{where}: question_decomposition[{n}]"
        sub_question = _text(item, "question", sub_where)
        sub_answer = _text(item, "answer", sub_where)
        raw.append(sub_question)
        support.append(item.get("paragraph_support_idx"))
        resolved = _resolve_references(sub_question, [s["answer"] for s in steps], n + 1, where)
        steps.append({"question": resolved, "answer": sub_answer})
    meta: dict[str, object] = {"raw_decomposition": raw, "paragraph_support_idx": support}
    if isinstance(record.get("answerable"), bool):
        meta["answerable"] = record["answerable"]
    return _example(
        "musique",
        qid,
        question,
        answers,
        hops=len(steps) or None,
        paragraphs=paragraphs,
        decomposition=steps or None,
        meta=meta,
    )


def _twowiki(record: Mapping[str, Any], where: str, number: int) -> Example:
    if "question_text" in record:
        return _ircot("2wikimultihopqa", record, where)
    qid = _identifier(record, ("_id", "id"), where)
    question = _text(record, "question", where)
    answers = _answers(_text(record, "answer", where), [], where, "answer")
    paragraphs = _sentence_paragraphs(record, where)
    kind = record.get("type")
    evidences = record.get("evidences") or []
    if not isinstance(evidences, list):
        raise DatasetFormatError(f"{where}: field 'evidences' must be a list")
    hops = TWOWIKI_HOPS.get(kind) if isinstance(kind, str) else None
    if hops is None:
        hops = len(evidences) or None
    meta: dict[str, object] = {"supporting_facts": record.get("supporting_facts") or [], "evidences": evidences}
    if isinstance(kind, str):
        meta["type"] = kind
    return _example("2wikimultihopqa", qid, question, answers, hops=hops, paragraphs=paragraphs, meta=meta)


def _evidence_paragraphs(evidence: Any) -> list[str]:
    """The Wikipedia paragraph keys (``"Title-N"``) that StrategyQA's nested ``evidence`` cites."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, list):
            for child in node:
                walk(child)
        elif isinstance(node, str) and node not in {"operation", "no_evidence"} and node not in found:
            found.append(node)

    walk(evidence)
    return found


def _strategyqa(record: Mapping[str, Any], where: str, number: int) -> Example:
    qid = _identifier(record, ("qid", "id"), where)
    question = _text(record, "question", where)
    answer = _field(record, "answer", where)
    if not isinstance(answer, bool):
        raise DatasetFormatError(f"{where}: field 'answer' must be true or false, got {answer!r}")
    steps: list[Step] | None = None
    if record.get("decomposition") is not None:
        raw = _list(record, "decomposition", where)
        if not all(isinstance(s, str) and s.strip() for s in raw):
            raise DatasetFormatError(f"{where}: field 'decomposition' must be a list of non-empty strings")
        steps = [{"question": _clean(s), "answer": ""} for s in raw] or None
    meta: dict[str, object] = {k: record[k] for k in ("term", "description") if isinstance(record.get(k), str)}
    facts = record.get("facts")
    if isinstance(facts, list):
        meta["facts"] = [_clean(str(f)) for f in facts]
    if "evidence" in record:
        meta["evidence_paragraphs"] = _evidence_paragraphs(record["evidence"])
    return _example(
        "strategyqa",
        qid,
        question,
        ["yes" if answer else "no"],
        hops=len(steps) if steps else None,
        decomposition=steps,
        meta=meta,
    )


def _fever_label(value: Any, where: str, key: str) -> str:
    label = _clean(value).upper() if isinstance(value, str) else None
    if label not in FEVER_LABELS:
        raise DatasetFormatError(f"{where}: {key} must be one of {', '.join(FEVER_LABELS)}, got {value!r}")
    return label


def _fever(record: Mapping[str, Any], where: str, number: int) -> Example:
    qid = _identifier(record, ("id",), where)
    meta: dict[str, object] = {}
    if "claim" in record or "input" not in record:
        claim = _text(record, "claim", where)
        label = _fever_label(_field(record, "label", where), where, "field 'label'")
        pages: list[str] = []
        evidence = record.get("evidence")
        for group in evidence if isinstance(evidence, list) else []:
            for item in group if isinstance(group, list) else []:
                if isinstance(item, list) and len(item) >= 3 and isinstance(item[2], str) and item[2] not in pages:
                    pages.append(item[2])
        meta["evidence_pages"] = pages
        if isinstance(record.get("verifiable"), str):
            meta["verifiable"] = record["verifiable"]
    else:  # KILT
        claim = _text(record, "input", where)
        labels = [o.get("answer") for o in _list(record, "output", where) if isinstance(o, dict) and "answer" in o]
        if not labels:
            raise DatasetFormatError(f"{where}: no 'answer' in field 'output'")
        label = _fever_label(labels[0], where, "output[0].answer")
    return _example("fever", qid, claim, [label], hops=None, meta=meta)


def _eli5(record: Mapping[str, Any], where: str, number: int) -> Example:
    meta: dict[str, object] = {}
    if "input" in record:  # KILT
        qid = _identifier(record, ("id",), where)
        question = _text(record, "input", where)
        output = _list(record, "output", where)
        for n, item in enumerate(output):
            if not isinstance(item, dict):
                raise DatasetFormatError(f"{where}: output[{n}] must be an object")
        references = [item["answer"] for item in output if "answer" in item]
        answers = _answers("", references, where, "output.answer")
    else:  # Hugging Face eli5
        qid = _identifier(record, ("q_id", "id"), where)
        question = _text(record, "title", where)
        block = _field(record, "answers", where)
        if not isinstance(block, dict) or not isinstance(block.get("text"), list):
            raise DatasetFormatError(f"{where}: field 'answers' must be an object with a list 'text'")
        answers = _answers("", block["text"], where, "answers.text")
        selftext = record.get("selftext")
        if isinstance(selftext, str) and selftext.strip():
            meta["selftext"] = _clean(selftext)
        if isinstance(record.get("subreddit"), str):
            meta["subreddit"] = record["subreddit"]
    return _example("eli5", qid, question, answers, hops=None, meta=meta)


def _step_answers(record: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = record.get(key)
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise DatasetFormatError(f"{where}: field {key!r} must be a string or a list of strings")
    return [v for v in (_clean(v) for v in values) if v]


def _bamboogle(record: Mapping[str, Any], where: str, number: int) -> Example:
    qid = _identifier(record, ("id", "qid"), where, fallback=f"bamboogle-{number}")
    question = _text(record, "Question", where)
    answers = _answers(_text(record, "Answer", where), [], where, "Answer")
    steps: list[Step] = []
    step_answers: list[list[str]] = []
    for k in (1, 2):
        sub_question = record.get(f"Q{k}")
        if sub_question is None or (isinstance(sub_question, str) and not sub_question.strip()):
            continue
        if not isinstance(sub_question, str):
            raise DatasetFormatError(f"{where}: field 'Q{k}' must be a string")
        sub_answers = _step_answers(record, f"A{k}", where)
        steps.append({"question": _clean(sub_question), "answer": sub_answers[0] if sub_answers else ""})
        step_answers.append(sub_answers)
    meta: dict[str, object] = {"step_answers": step_answers} if steps else {}
    return _example("bamboogle", qid, question, answers, hops=2, decomposition=steps or None, meta=meta)


_PARSERS: dict[str, Callable[[Mapping[str, Any], str, int], Example]] = {
    "hotpotqa": _hotpotqa,
    "musique": _musique,
    "2wikimultihopqa": _twowiki,
    "strategyqa": _strategyqa,
    "fever": _fever,
    "eli5": _eli5,
    "bamboogle": _bamboogle,
}


# --- public API --------------------------------------------------------------------------------


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
    parse = _PARSERS[dataset]
    seen: dict[str, str] = {}
    for record, where, number in _records(path):
        if not isinstance(record, dict):
            raise DatasetFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
        example = parse(record, where, number)
        if example["qid"] in seen:
            raise DatasetFormatError(f"{where}: question id {example['qid']!r} already used at {seen[example['qid']]}")
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


def _detect_record(record: Mapping[str, Any]) -> str | None:
    keys = set(record)
    if "question_text" in keys and "contexts" in keys:
        qid = str(record.get("question_id", ""))
        if _MUSIQUE_HOPS.match(qid):
            return "musique"
        if record.get("type") in {"inference", "compositional", "bridge_comparison"}:
            return "2wikimultihopqa"
        return "hotpotqa"
    if "question_decomposition" in keys or ("paragraphs" in keys and "answer_aliases" in keys):
        return "musique"
    if "context" in keys and "question" in keys:
        if "evidences" in keys or record.get("type") in {"inference", "compositional", "bridge_comparison"}:
            return "2wikimultihopqa"
        return "hotpotqa"
    if "claim" in keys:
        return "fever"
    if "Question" in keys and "Answer" in keys:
        return "bamboogle"
    if "question" in keys and isinstance(record.get("answer"), bool):
        return "strategyqa"
    if "q_id" in keys and "answers" in keys:
        return "eli5"
    if "input" in keys and isinstance(record.get("output"), list):
        labels = [o.get("answer") for o in record["output"] if isinstance(o, dict)]
        if labels and all(isinstance(a, str) and a.strip().upper() in FEVER_LABELS for a in labels):
            return "fever"
        return "eli5"
    return None


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
    for record, where, _ in _records(path):
        if not isinstance(record, dict):
            raise DatasetFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
        dataset = _detect_record(record)
        if dataset is None:
            fields = ", ".join(sorted(record)[:12])
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
