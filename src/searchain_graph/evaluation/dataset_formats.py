"""Reading one record of each dataset's native format into an :class:`~searchain_graph.evaluation.datasets.Example`.

:data:`PARSERS` maps each canonical dataset name to a function ``(record, where, number) ->
Example`` that reads one record as the dataset's authors distribute it (IRCoT's processed
layout is accepted for HotpotQA, MuSiQue and 2WikiMultihopQA, KILT's for FEVER and ELI5; the
formats are listed in :mod:`searchain_graph.evaluation.datasets`); :func:`detect_record` names the
dataset a record belongs to. The parsers are written with the field checks above them:
:func:`required_field`, :func:`text_field`, :func:`optional_text` (and :func:`optional_texts`),
:func:`list_field`, :func:`identifier_field`, :func:`gold_answers` and the paragraph readers
(:func:`paragraph_objects`, :func:`sentence_paragraphs`) raise
:class:`~searchain_graph.evaluation.datasets.DatasetFormatError` naming the record and field; text
is whitespace-collapsed by :mod:`searchain_graph.ir.corpus`'s own ``collapse_whitespace``.
:func:`make_example` builds the :class:`~searchain_graph.evaluation.datasets.Example`;
:func:`describe` quotes a value in a message, bounded. Nothing is skipped silently.

A field that wants a string takes nothing else: a list, an object, a number or ``null`` there is
an error (``null`` means absent for an optional field), never text made from it. Numbers: JSON is
decoded by :mod:`searchain_graph.ir.json_records`, which refuses ``NaN``, ``Infinity``, ``1e400``
and integers of more than 4,300 digits (naming the field) and replaces lone surrogates by U+FFFD;
an id may be a JSON integer (kept as its digits) or a string (kept whatever its length); a
sentence index (``supporting_facts``) or a paragraph index (``paragraph_support_idx``) must be
an integer.

Normalisation: question and answer strings have their whitespace collapsed
(``" ".join(text.split())``); so have paragraph titles and texts, and HotpotQA/2Wiki
sentences are stripped and joined with one space, exactly as :mod:`searchain_graph.ir.corpus`
does, so that :func:`~searchain_graph.evaluation.dataset_loading.corpus_paragraphs` gives the same
ids as ``searchain index`` run on the same QA file. ``answers`` holds the gold answer first and then
its aliases, deduplicated in order, empty strings dropped. A question's paragraphs are kept as the
file lists them (duplicates included);
:func:`~searchain_graph.evaluation.dataset_loading.corpus_paragraphs` deduplicates their union.

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
answer of step *k*, and its Wikidata-style steps ``"S >> R"`` written as "What is the *R* of
*S*?", the question a chain would ask (the raw steps stay in ``meta["raw_decomposition"]``);
Bamboogle's ``Q1``/``A1``, ``Q2``/``A2`` (the first of each list of sub-answers; all of
them in ``meta["step_answers"]``); 2WikiMultihopQA's evidence triples ``(subject, relation,
object)`` as "What is the *relation* of *subject*?" with the object as answer (the dataset has no
natural-language sub-questions; the triples are its gold reasoning path); StrategyQA's
sub-questions with empty answers (their ``#k`` references cannot be resolved).

Identifiers: the dataset's own (``_id``, ``question_id``, ``id``, ``qid``, ``q_id``, as a
string); Bamboogle has none, so its questions are ``bamboogle-N`` by position in the file
(from 1) unless a record carries an ``id`` or ``qid``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from searchain_graph.evaluation.datasets import TASKS, DatasetFormatError, Example, Paragraph, Step
from searchain_graph.ir.corpus import collapse_whitespace

FEVER_LABELS = ("SUPPORTS", "REFUTES", "NOT ENOUGH INFO")

TWOWIKI_HOPS: dict[str, int] = {"comparison": 2, "inference": 2, "compositional": 2, "bridge_comparison": 4}
"""Hops of a 2WikiMultihopQA question by its ``type``."""

_TWOWIKI_ONLY = frozenset(("inference", "compositional", "bridge_comparison"))
"""2WikiMultihopQA's question types that HotpotQA does not have."""
_REFERENCE = re.compile(r"#(\d+)")
_MUSIQUE_HOPS = re.compile(r"^(\d+)hop")
MAX_COUNT_DIGITS = 6
"""A hop count or a ``#k`` step reference of more digits is no count (and would be an ``int`` of
thousands of digits, which Python refuses to make): the record is refused, naming the field."""


def _count(digits: str, where: str, what: str) -> int:
    """``int(digits)``, or the format error when there are more than :data:`MAX_COUNT_DIGITS`."""
    if len(digits) > MAX_COUNT_DIGITS:
        raise DatasetFormatError(f"{where}: {what} has a number of {len(digits)} digits, not a count")
    return int(digits)


# --- field checks ------------------------------------------------------------------------------


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


def columns_as_rows(record: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """A HotpotQA/2Wiki record in Hugging Face ``datasets``' layout, in the dataset's own.

    ``datasets.load_dataset("hotpot_qa", "distractor")`` gives ``context`` as ``{"title": [...],
    "sentences": [[...], ...]}`` and ``supporting_facts`` as ``{"title": [...], "sent_id": [...]}``:
    columns, where the dataset's files hold ``[title, sentences]`` and ``[title, sentence index]``
    rows. Records already in rows are returned as they are.

    Raises:
        DatasetFormatError: the columns are of different lengths.
    """
    out = dict(record)
    for key, columns in (("context", ("title", "sentences")), ("supporting_facts", ("title", "sent_id"))):
        value = record.get(key)
        if not isinstance(value, Mapping) or not set(columns) <= set(value):
            continue
        first, second = value[columns[0]], value[columns[1]]
        if not isinstance(first, list) or not isinstance(second, list) or len(first) != len(second):
            raise DatasetFormatError(
                f"{where}: field {key!r} in the datasets layout must hold lists {columns[0]!r} and {columns[1]!r} "
                "of one length"
            )
        out[key] = [[a, b] for a, b in zip(first, second, strict=True)]
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


# --- one parser per format ---------------------------------------------------------------------


def _ircot(dataset: str, record: Mapping[str, Any], where: str) -> Example:
    """IRCoT's processed layout, shared by its HotpotQA, MuSiQue and 2Wiki files."""
    qid = identifier_field(record, ("question_id",), where)
    question = text_field(record, "question_text", where)
    spans: list[Any] = []
    for n, obj in enumerate(list_field(record, "answers_objects", where)):
        if not isinstance(obj, dict):
            raise DatasetFormatError(f"{where}: answers_objects[{n}] must be an object")
        obj_spans = obj.get("spans") or []
        if not isinstance(obj_spans, list):
            raise DatasetFormatError(f"{where}: answers_objects[{n}].spans must be a list")
        spans.extend(obj_spans)
        number = obj.get("number")
        if number is not None and (isinstance(number, bool) or not isinstance(number, (str, int, float))):
            raise DatasetFormatError(f"{where}: answers_objects[{n}].number must be a number or a string")
        if not obj_spans and number is not None and str(number).strip():
            spans.append(str(number))
    answers = gold_answers("", spans, where, "answers_objects.spans")
    paragraphs = paragraph_objects(list_field(record, "contexts", where), "contexts", where)
    meta = optional_texts(record, ("type", "level"), where)
    hops: int | None = None
    if dataset == "hotpotqa":
        hops = 2
    elif dataset == "musique":
        match = _MUSIQUE_HOPS.match(qid)
        hops = _count(match.group(1), where, "field 'question_id'") if match else None
    elif dataset == "2wikimultihopqa":
        hops = TWOWIKI_HOPS.get(str(meta.get("type")))
    return make_example(dataset, qid, question, answers, hops=hops, paragraphs=paragraphs, meta=meta)


def _hotpotqa(record: Mapping[str, Any], where: str, number: int) -> Example:
    if "question_text" in record:
        return _ircot("hotpotqa", record, where)
    record = columns_as_rows(record, where)
    qid = identifier_field(record, ("_id", "id"), where)
    question = text_field(record, "question", where)
    answers = gold_answers(text_field(record, "answer", where), [], where, "answer")
    paragraphs = sentence_paragraphs(record, where)
    meta = optional_texts(record, ("type", "level"), where)
    meta["supporting_facts"] = record.get("supporting_facts") or []
    return make_example("hotpotqa", qid, question, answers, hops=2, paragraphs=paragraphs, meta=meta)


def _resolve_references(question: str, answers: list[str], step: int, where: str) -> str:
    """Replace ``#k`` in step ``step``'s question (from 1) by the answer of an earlier step ``k``."""

    def answer(match: re.Match[str]) -> str:
        k = _count(match.group(1), f"{where}: question_decomposition[{step - 1}]", "a #k reference")
        if not 1 <= k < step:
            raise DatasetFormatError(
                f"{where}: question_decomposition[{step - 1}] refers to #{k}, which is not an earlier step"
            )
        return answers[k - 1]

    return _REFERENCE.sub(answer, question)


def _musique(record: Mapping[str, Any], where: str, number: int) -> Example:
    if "question_text" in record:
        return _ircot("musique", record, where)
    qid = identifier_field(record, ("id",), where)
    question = text_field(record, "question", where)
    aliases = record.get("answer_aliases") or []
    if not isinstance(aliases, list):
        raise DatasetFormatError(f"{where}: field 'answer_aliases' must be a list")
    answers = gold_answers(text_field(record, "answer", where), aliases, where, "answer_aliases")
    paragraphs = paragraph_objects(list_field(record, "paragraphs", where), "paragraphs", where)
    steps: list[Step] = []
    raw: list[str] = []
    support: list[object] = []
    for n, item in enumerate(list_field(record, "question_decomposition", where)):
        if not isinstance(item, dict):
            raise DatasetFormatError(f"{where}: question_decomposition[{n}] must be an object")
        sub_where = f"{where}: question_decomposition[{n}]"
        sub_question = text_field(item, "question", sub_where)
        sub_answer = text_field(item, "answer", sub_where)
        raw.append(sub_question)
        index = item.get("paragraph_support_idx")
        if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
            raise DatasetFormatError(
                f"{sub_where}.paragraph_support_idx must be an integer or null, got {describe(index)}"
            )
        support.append(index)
        resolved = _resolve_references(sub_question, [s["answer"] for s in steps], n + 1, where)
        steps.append({"question": _triple_question(resolved), "answer": sub_answer})
    meta: dict[str, object] = {"raw_decomposition": raw, "paragraph_support_idx": support}
    if isinstance(record.get("answerable"), bool):
        meta["answerable"] = record["answerable"]
    return make_example(
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
    record = columns_as_rows(record, where)
    qid = identifier_field(record, ("_id", "id"), where)
    question = text_field(record, "question", where)
    answers = gold_answers(text_field(record, "answer", where), [], where, "answer")
    paragraphs = sentence_paragraphs(record, where)
    kind = optional_text(record, "type", where)
    evidences = record.get("evidences") or []
    if not isinstance(evidences, list):
        raise DatasetFormatError(f"{where}: field 'evidences' must be a list")
    for n, triple in enumerate(evidences):
        if not isinstance(triple, list) or not all(isinstance(x, str) for x in triple):  # a short one gives no step
            raise DatasetFormatError(f"{where}: evidences[{n}] must be [subject, relation, object] (strings)")
    hops = TWOWIKI_HOPS.get(kind) if kind is not None else None
    if hops is None:
        hops = len(evidences) or None
    meta: dict[str, object] = {"supporting_facts": record.get("supporting_facts") or [], "evidences": evidences}
    if kind is not None:
        meta["type"] = kind
    steps = _evidence_steps(evidences)
    return make_example(
        "2wikimultihopqa",
        qid,
        question,
        answers,
        hops=hops,
        paragraphs=paragraphs,
        decomposition=steps or None,
        meta=meta,
    )


def _relation_question(subject: str, relation: str) -> str:
    """A knowledge-base step ``(subject, relation)`` as the question an LLM's chain would ask."""
    return f"What is the {relation.strip()} of {subject.strip()}?"


def _triple_question(question: str) -> str:
    """MuSiQue's Wikidata-style steps, ``"S >> R"``, as "What is the R of S?"; other questions unchanged."""
    subject, arrow, relation = question.partition(" >> ")
    if not arrow or not subject.strip() or not relation.strip():
        return question
    return _relation_question(subject, relation)


def _evidence_steps(evidences: list[list[str]]) -> list[Step]:
    """2Wiki's evidence triples ``(subject, relation, object)`` as sub-questions: "What is the R of S?" -> O.

    A triple with a blank part, or not of three parts, gives no step.
    """
    steps: list[Step] = []
    for triple in evidences:
        if len(triple) == 3 and all(x.strip() for x in triple):
            subject, relation, obj = (x.strip() for x in triple)
            steps.append({"question": _relation_question(subject, relation), "answer": obj})
    return steps


def _evidence_paragraphs(evidence: Any, where: str) -> list[str]:
    """The Wikipedia paragraph keys (``"Title-N"``) that StrategyQA's nested ``evidence`` cites.

    Walked without recursion: the lists may be nested as deep as the JSON parser reads.

    Raises:
        DatasetFormatError: a leaf is not a string.
    """
    found: list[str] = []
    stack = [evidence]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(reversed(node))
        elif not isinstance(node, str):
            raise DatasetFormatError(f"{where}: field 'evidence' must hold lists of strings, got {describe(node)}")
        elif node not in {"operation", "no_evidence"} and node not in found:
            found.append(node)
    return found


def _strategyqa(record: Mapping[str, Any], where: str, number: int) -> Example:
    qid = identifier_field(record, ("qid", "id"), where)
    question = text_field(record, "question", where)
    answer = required_field(record, "answer", where)
    if not isinstance(answer, bool):
        raise DatasetFormatError(f"{where}: field 'answer' must be true or false, got {describe(answer)}")
    steps: list[Step] | None = None
    if record.get("decomposition") is not None:
        raw = list_field(record, "decomposition", where)
        if not all(isinstance(s, str) and s.strip() for s in raw):
            raise DatasetFormatError(f"{where}: field 'decomposition' must be a list of non-empty strings")
        steps = [{"question": collapse_whitespace(s), "answer": ""} for s in raw] or None
    meta = optional_texts(record, ("term", "description"), where)
    facts = record.get("facts")
    if facts is not None:
        if not isinstance(facts, list) or not all(isinstance(f, str) for f in facts):
            raise DatasetFormatError(f"{where}: field 'facts' must be a list of strings")
        meta["facts"] = [collapse_whitespace(f) for f in facts]
    if "evidence" in record:
        meta["evidence_paragraphs"] = _evidence_paragraphs(record["evidence"], where)
    return make_example(
        "strategyqa",
        qid,
        question,
        ["yes" if answer else "no"],
        hops=len(steps) if steps else None,
        decomposition=steps,
        meta=meta,
    )


def _fever_label(value: Any, where: str, key: str) -> str:
    label = collapse_whitespace(value).upper() if isinstance(value, str) else None
    if label not in FEVER_LABELS:
        raise DatasetFormatError(f"{where}: {key} must be one of {', '.join(FEVER_LABELS)}, got {describe(value)}")
    return label


def _fever(record: Mapping[str, Any], where: str, number: int) -> Example:
    qid = identifier_field(record, ("id",), where)
    meta: dict[str, object] = {}
    if "claim" in record or "input" not in record:
        claim = text_field(record, "claim", where)
        label = _fever_label(required_field(record, "label", where), where, "field 'label'")
        pages: list[str] = []
        evidence = record.get("evidence")
        for group in evidence if isinstance(evidence, list) else []:
            for item in group if isinstance(group, list) else []:
                if isinstance(item, list) and len(item) >= 3 and isinstance(item[2], str) and item[2] not in pages:
                    pages.append(item[2])
        meta["evidence_pages"] = pages
        meta.update(optional_texts(record, ("verifiable",), where))
    else:  # KILT
        claim = text_field(record, "input", where)
        labels = [o.get("answer") for o in list_field(record, "output", where) if isinstance(o, dict) and "answer" in o]
        if not labels:
            raise DatasetFormatError(f"{where}: no 'answer' in field 'output'")
        label = _fever_label(labels[0], where, "output[0].answer")
    return make_example("fever", qid, claim, [label], hops=None, meta=meta)


def _eli5(record: Mapping[str, Any], where: str, number: int) -> Example:
    meta: dict[str, object] = {}
    if "input" in record:  # KILT
        qid = identifier_field(record, ("id",), where)
        question = text_field(record, "input", where)
        output = list_field(record, "output", where)
        for n, item in enumerate(output):
            if not isinstance(item, dict):
                raise DatasetFormatError(f"{where}: output[{n}] must be an object")
        references = [item["answer"] for item in output if "answer" in item]
        answers = gold_answers("", references, where, "output.answer")
    else:  # Hugging Face eli5
        qid = identifier_field(record, ("q_id", "id"), where)
        question = text_field(record, "title", where)
        block = required_field(record, "answers", where)
        if not isinstance(block, dict) or not isinstance(block.get("text"), list):
            raise DatasetFormatError(f"{where}: field 'answers' must be an object with a list 'text'")
        answers = gold_answers("", block["text"], where, "answers.text")
        selftext = optional_text(record, "selftext", where)
        if selftext and selftext.strip():
            meta["selftext"] = collapse_whitespace(selftext)
        meta.update(optional_texts(record, ("subreddit",), where))
    return make_example("eli5", qid, question, answers, hops=None, meta=meta)


def _step_answers(record: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = record.get(key)
    if value is None:
        return []
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise DatasetFormatError(f"{where}: field {key!r} must be a string or a list of strings")
    return [v for v in (collapse_whitespace(v) for v in values) if v]


def _bamboogle(record: Mapping[str, Any], where: str, number: int) -> Example:
    qid = identifier_field(record, ("id", "qid"), where, fallback=f"bamboogle-{number}")
    question = text_field(record, "Question", where)
    answers = gold_answers(text_field(record, "Answer", where), [], where, "Answer")
    steps: list[Step] = []
    step_answers: list[list[str]] = []
    for k in (1, 2):
        sub_question = record.get(f"Q{k}")
        if sub_question is None or (isinstance(sub_question, str) and not sub_question.strip()):
            continue
        if not isinstance(sub_question, str):
            raise DatasetFormatError(f"{where}: field 'Q{k}' must be a string")
        sub_answers = _step_answers(record, f"A{k}", where)
        steps.append({"question": collapse_whitespace(sub_question), "answer": sub_answers[0] if sub_answers else ""})
        step_answers.append(sub_answers)
    meta: dict[str, object] = {"step_answers": step_answers} if steps else {}
    return make_example("bamboogle", qid, question, answers, hops=2, decomposition=steps or None, meta=meta)


PARSERS: dict[str, Callable[[Mapping[str, Any], str, int], Example]] = {
    "hotpotqa": _hotpotqa,
    "musique": _musique,
    "2wikimultihopqa": _twowiki,
    "strategyqa": _strategyqa,
    "fever": _fever,
    "eli5": _eli5,
    "bamboogle": _bamboogle,
}
"""Each canonical dataset name's parser: ``(record, where, number) -> Example``.

``where`` names the record in error messages and ``number`` is its position in the file from
1 (Bamboogle's ids are made from it); a parser raises :class:`DatasetFormatError`.
"""


# --- detection ---------------------------------------------------------------------------------


def detect_record(record: Mapping[str, Any]) -> str | None:
    """The canonical name of the dataset whose native format ``record`` is in, or ``None``.

    Args:
        record: One record of a dataset file (the first, for :func:`~.dataset_loading.detect_dataset`).

    Returns:
        A key of :data:`PARSERS`, judged by the record's fields; ``None`` when they match no dataset.
    """
    keys = set(record)
    kind = record.get("type") if isinstance(record.get("type"), str) else None  # a list is no type (and unhashable)
    if "question_text" in keys and "contexts" in keys:
        qid = record.get("question_id")
        if isinstance(qid, str) and _MUSIQUE_HOPS.match(qid):
            return "musique"
        if kind in _TWOWIKI_ONLY:
            return "2wikimultihopqa"
        return "hotpotqa"
    if "question_decomposition" in keys or ("paragraphs" in keys and "answer_aliases" in keys):
        return "musique"
    if "context" in keys and "question" in keys:
        if "evidences" in keys or kind in _TWOWIKI_ONLY:
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
