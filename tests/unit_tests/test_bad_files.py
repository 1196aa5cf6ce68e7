"""Bad input from corpus and dataset files: the smallest file that shows each class of fault.

Every fault ends as :class:`CorpusFormatError` / :class:`DatasetFormatError` naming the file, the
line and the field, or (where harmless) the value is kept or repaired and the file is read:

1. numbers of thousands of digits, ``1e400``, ``NaN`` and ``Infinity`` where text becomes a number;
2. JSON nested thousands deep on one line;
3. a list, an object, a number or ``null`` where a string is expected;
4. lone surrogates (``"\\ud800"``): replaced by U+FFFD, with one warning per file.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from searchain_graph.evaluation.dataset_formats import detect_record
from searchain_graph.evaluation.dataset_loading import iter_dataset, load_dataset
from searchain_graph.evaluation.datasets import DatasetFormatError
from searchain_graph.ir.corpus import CorpusFormatError, iter_corpus, load_corpus

BIG = "9" * 5000
"""An integer past Python's 4,300-digit limit on ``int`` <-> ``str`` conversion."""

HOTPOT: dict[str, Any] = {
    "_id": "q1",
    "question": "Who?",
    "answer": "Ann",
    "type": "bridge",
    "level": "easy",
    "context": [["T", ["One.", "Two."]]],
    "supporting_facts": [["T", 0]],
}
TWOWIKI: dict[str, Any] = {**HOTPOT, "type": "compositional", "evidences": [["A", "mother", "B"]]}
MUSIQUE: dict[str, Any] = {
    "id": "2hop__1_2",
    "question": "Who?",
    "answer": "Ann",
    "answer_aliases": ["Annie"],
    "answerable": True,
    "paragraphs": [{"idx": 0, "title": "T", "paragraph_text": "Text.", "is_supporting": True}],
    "question_decomposition": [
        {"id": 1, "question": "Who is X?", "answer": "Y", "paragraph_support_idx": 0},
        {"id": 2, "question": "Who is #1 's mother?", "answer": "Ann", "paragraph_support_idx": 0},
    ],
}
IRCOT: dict[str, Any] = {
    "question_id": "q1",
    "question_text": "Who?",
    "answers_objects": [{"number": "", "date": {"day": "", "month": "", "year": ""}, "spans": ["Ann"]}],
    "contexts": [{"id": 0, "title": "T", "paragraph_text": "Text.", "is_supporting": True}],
}
STRATEGYQA: dict[str, Any] = {
    "qid": "q1",
    "term": "X",
    "description": "A thing",
    "question": "Is it?",
    "answer": True,
    "facts": ["A fact."],
    "decomposition": ["Is #1?"],
    "evidence": [[[["X-1"]], ["operation"]]],
}
RECORDS = {"hotpotqa": HOTPOT, "2wikimultihopqa": TWOWIKI, "musique": MUSIQUE, "strategyqa": STRATEGYQA}


def _write(path: Path, *lines: str) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _refused(error: type[ValueError], read: Callable[[], Iterable[Any]], path: Path, line: int, field: str) -> str:
    """Reading fails with ``error`` naming ``path:line`` and ``field``; returns the message."""
    with pytest.raises(error) as caught:
        list(read())
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}:"), message[:300]
    assert field in message, message[:300]
    assert len(message) < 1000, "a message quotes a bounded piece of the file"
    return message


def _corpus_refused(path: Path, line: int, field: str) -> str:
    return _refused(CorpusFormatError, lambda: iter_corpus(path), path, line, field)


def _dataset_refused(dataset: str, path: Path, line: int, field: str) -> str:
    return _refused(DatasetFormatError, lambda: iter_dataset(dataset, path), path, line, field)


def _with(record: dict[str, Any], **changes: Any) -> str:
    return json.dumps({**record, **changes})


# --- 1. numbers --------------------------------------------------------------------------------


def test_corpus_id_too_long_for_an_int_is_a_format_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.jsonl", '{"id": "1", "text": "a"}', f'{{"id": {BIG}, "text": "b"}}')
    _corpus_refused(path, 2, "'id'")


def test_corpus_id_of_thousands_of_digits_as_a_string_is_kept(tmp_path: Path) -> None:
    jsonl = _write(tmp_path / "c.jsonl", json.dumps({"id": BIG + "0" * 5000, "text": "a"}))
    tsv = _write(tmp_path / "c.tsv", "id\ttext\ttitle", f"{BIG}\ta\tT")
    assert [d.metadata["id"] for d in iter_corpus(jsonl)] == [BIG + "0" * 5000]
    assert [d.metadata["id"] for d in iter_corpus(tsv)] == [BIG]


@pytest.mark.parametrize("number", ["1e400", "-1e400", "NaN", "Infinity", "-Infinity"])
def test_corpus_non_finite_numbers_are_format_errors(tmp_path: Path, number: str) -> None:
    path = _write(tmp_path / "c.jsonl", f'{{"text": "a", "id": {number}}}')
    _corpus_refused(path, 1, "'id'")


def test_corpus_number_errors_name_the_record_in_a_json_array(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.json", "[", '{"text": "a"},', f'{{"text": "b", "title": {BIG}}}', "]")
    _corpus_refused(path, 3, "title")


def test_dataset_question_id_too_long_for_an_int_is_a_format_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", json.dumps(HOTPOT).replace('"_id": "q1"', f'"_id": {BIG}'))
    _dataset_refused("hotpotqa", path, 1, "'_id'")


def test_dataset_question_id_of_thousands_of_digits_as_a_string_is_kept(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", _with(HOTPOT, _id=BIG))
    assert [e["qid"] for e in load_dataset("hotpotqa", path)] == [BIG]


def test_dataset_supporting_fact_sentence_index_too_long_is_a_format_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", json.dumps(HOTPOT).replace('["T", 0]', f'["T", {BIG}]'))
    _dataset_refused("hotpotqa", path, 1, "supporting_facts[0][1]")


@pytest.mark.parametrize("index", ['"0"', "-1", "1.5", "true", "null", "[0]"])
def test_dataset_supporting_fact_sentence_index_must_be_an_index(tmp_path: Path, index: str) -> None:
    path = _write(tmp_path / "d.jsonl", json.dumps(TWOWIKI).replace('["T", 0]', f'["T", {index}]'))
    _dataset_refused("2wikimultihopqa", path, 1, "supporting_facts[0]")


@pytest.mark.parametrize("number", ["1e400", "NaN", "-Infinity"])
def test_dataset_non_finite_numbers_are_format_errors(tmp_path: Path, number: str) -> None:
    path = _write(tmp_path / "d.jsonl", json.dumps(MUSIQUE).replace('"paragraph_support_idx": 0', f'"x": {number}', 1))
    _dataset_refused("musique", path, 1, "question_decomposition[0].x")


def test_musique_reference_of_thousands_of_digits_is_a_format_error(tmp_path: Path) -> None:
    steps = [{"question": "Who is X?", "answer": "Y"}, {"question": f"Who is #{BIG}?", "answer": "Ann"}]
    path = _write(tmp_path / "d.jsonl", _with(MUSIQUE, question_decomposition=steps))
    _dataset_refused("musique", path, 1, "question_decomposition[1]")


def test_ircot_hop_count_of_thousands_of_digits_is_a_format_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "d.jsonl", _with(IRCOT, question_id=f"{BIG}hop__1"))
    _dataset_refused("musique", path, 1, "'question_id'")
    _dataset_refused("auto", path, 1, "'question_id'")


@pytest.mark.parametrize("index", ['"0"', "1.5", "true", "[0]", "{}"])
def test_musique_paragraph_support_index_must_be_an_integer_or_null(tmp_path: Path, index: str) -> None:
    record = json.dumps(MUSIQUE).replace('"paragraph_support_idx": 0', f'"paragraph_support_idx": {index}', 1)
    _dataset_refused(
        "musique", _write(tmp_path / "d.jsonl", record), 1, "question_decomposition[0].paragraph_support_idx"
    )


@pytest.mark.parametrize("number", ["true", "[1]", "{}"])
def test_ircot_answer_number_must_be_a_number_or_a_string(tmp_path: Path, number: str) -> None:
    record = json.dumps(IRCOT).replace('"number": ""', f'"number": {number}')
    _dataset_refused("hotpotqa", _write(tmp_path / "d.jsonl", record), 1, "answers_objects[0].number")


# --- 2. nesting --------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_corpus_line_nested_thousands_deep_is_a_format_error(tmp_path: Path, depth: int) -> None:
    bare = _write(tmp_path / "bare.jsonl", '{"text": "a"}', "[" * depth)
    _corpus_refused(bare, 2, "nested")
    field = _write(tmp_path / "field.jsonl", '{"text": "a", "extra": ' + "[" * depth + "]" * depth + "}")
    _corpus_refused(field, 1, "'extra'")


def test_corpus_json_array_nested_thousands_deep_is_a_format_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.json", "[", '{"text": "a"},', '{"text": "b", "x": ' + "[" * 5000 + "]" * 5000 + "}]")
    _corpus_refused(path, 3, "x")


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_dataset_line_nested_thousands_deep_is_a_format_error(tmp_path: Path, depth: int) -> None:
    path = _write(
        tmp_path / "d.jsonl",
        json.dumps(STRATEGYQA),
        _with(STRATEGYQA, qid="q2", evidence="@").replace('"@"', "[" * depth + "]" * depth),
    )
    _dataset_refused("strategyqa", path, 2, "'evidence'")
    _dataset_refused("auto", _write(tmp_path / "bare.jsonl", "{" * depth), 1, "nested")


def test_strategyqa_evidence_nested_hundreds_deep_is_read_without_recursion(tmp_path: Path) -> None:
    evidence = json.loads("[" * 400 + '"X-1"' + "]" * 400)
    path = _write(tmp_path / "d.jsonl", _with(STRATEGYQA, evidence=evidence))
    assert load_dataset("strategyqa", path)[0]["meta"]["evidence_paragraphs"] == ["X-1"]


# --- 3. types where a string is expected --------------------------------------------------------

WRONG = {"list": ["a"], "object": {"a": "b"}, "number": 7, "null": None}


def _set(record: dict[str, Any], *path: str | int) -> Callable[[Any], dict[str, Any]]:
    """A function giving a copy of ``record`` with the value at ``path`` replaced."""

    def change(value: Any) -> dict[str, Any]:
        copy = json.loads(json.dumps(record))
        node = copy
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = value
        return dict(copy)

    return change


NULL_OK = "null"
"""A field that may be ``null`` (absent, or an empty title): the record is read."""
ID = "number"
"""A question id, which may be an integer: the record is read, the id kept as its digits."""

FIELDS: list[tuple[str, str, Callable[[Any], dict[str, Any]], str]] = [
    # (dataset, the field the message names, the change, the kind of WRONG value that is allowed)
    *[
        (name, field, _set(record, *path), ok)
        for name, record in [("hotpotqa", HOTPOT), ("2wikimultihopqa", TWOWIKI)]
        for field, path, ok in [
            ("'_id'", ("_id",), ID),
            ("'question'", ("question",), ""),
            ("'answer'", ("answer",), ""),
            ("'type'", ("type",), NULL_OK),
            ("context[0]", ("context", 0, 0), ""),
            ("context[0]", ("context", 0, 1, 1), ""),
            ("supporting_facts[0]", ("supporting_facts", 0, 0), ""),
        ]
    ],
    ("hotpotqa", "'level'", _set(HOTPOT, "level"), NULL_OK),
    ("2wikimultihopqa", "evidences[0]", _set(TWOWIKI, "evidences", 0, 1), ""),
    ("musique", "'id'", _set(MUSIQUE, "id"), ID),
    ("musique", "'question'", _set(MUSIQUE, "question"), ""),
    ("musique", "'answer'", _set(MUSIQUE, "answer"), ""),
    ("musique", "answer_aliases[0]", _set(MUSIQUE, "answer_aliases", 0), ""),
    ("musique", "paragraphs[0]", _set(MUSIQUE, "paragraphs", 0, "title"), NULL_OK),
    ("musique", "paragraphs[0]", _set(MUSIQUE, "paragraphs", 0, "paragraph_text"), ""),
    ("musique", "question_decomposition[0]", _set(MUSIQUE, "question_decomposition", 0, "question"), ""),
    ("musique", "question_decomposition[1]", _set(MUSIQUE, "question_decomposition", 1, "answer"), ""),
    *[
        (name, field, _set(IRCOT, *path), ok)
        for name in ("hotpotqa", "musique", "2wikimultihopqa")
        for field, path, ok in [
            ("'question_id'", ("question_id",), ID),
            ("'question_text'", ("question_text",), ""),
            ("'type'", ("type",), NULL_OK),
            ("answers_objects.spans[0]", ("answers_objects", 0, "spans", 0), ""),
            ("contexts[0]", ("contexts", 0, "title"), NULL_OK),
            ("contexts[0]", ("contexts", 0, "paragraph_text"), ""),
        ]
    ],
    ("strategyqa", "'qid'", _set(STRATEGYQA, "qid"), ID),
    ("strategyqa", "'question'", _set(STRATEGYQA, "question"), ""),
    ("strategyqa", "'term'", _set(STRATEGYQA, "term"), NULL_OK),
    ("strategyqa", "'description'", _set(STRATEGYQA, "description"), NULL_OK),
    ("strategyqa", "'facts'", _set(STRATEGYQA, "facts", 0), ""),
    ("strategyqa", "'decomposition'", _set(STRATEGYQA, "decomposition", 0), ""),
    ("strategyqa", "'evidence'", _set(STRATEGYQA, "evidence", 0, 1, 0), "list"),  # lists nest there
]


@pytest.mark.parametrize("kind", list(WRONG))
@pytest.mark.parametrize(("dataset", "field", "change", "allowed"), FIELDS)
def test_dataset_field_of_a_wrong_type_is_a_format_error(
    tmp_path: Path, dataset: str, field: str, change: Callable[[Any], dict[str, Any]], allowed: str, kind: str
) -> None:
    record = change(WRONG[kind])
    path = _write(tmp_path / "d.jsonl", json.dumps(record))
    if kind == allowed:
        assert len(load_dataset(dataset, path)) == 1
        return
    _dataset_refused(dataset, path, 1, field)
    if detect_record(record) == dataset:
        _dataset_refused("auto", path, 1, field)


@pytest.mark.parametrize("kind", list(WRONG))
@pytest.mark.parametrize("key", ["text", "title", "id", "contents", "paragraph_text"])
def test_corpus_field_of_a_wrong_type_is_a_format_error(tmp_path: Path, key: str, kind: str) -> None:
    value = WRONG[kind]
    record: dict[str, Any] = {"text": "a"} if key in {"title", "id"} else {}
    record[key] = value
    path = _write(tmp_path / "c.jsonl", '{"text": "fine"}', json.dumps(record))
    if value is None:  # null means absent, as before
        if key in {"title", "id"}:
            assert len(load_corpus(path)) == 2
        else:
            _corpus_refused(path, 2, "text")
        return
    if key == "id" and kind == "number":  # an integer id is accepted, as before
        assert [d.metadata["id"] for d in iter_corpus(path)] == ["1", "7"]
        return
    _corpus_refused(path, 2, repr(key))


@pytest.mark.parametrize("kind", [k for k in WRONG if k != "null"])
@pytest.mark.parametrize("where", ["title", "sentence", "object title", "object text"])
def test_corpus_qa_paragraph_of_a_wrong_type_is_a_format_error(tmp_path: Path, where: str, kind: str) -> None:
    value = WRONG[kind]
    record: dict[str, Any] = {
        "title": {"context": [[value, ["s"]]]},
        "sentence": {"context": [["T", ["s", value]]]},
        "object title": {"contexts": [{"title": value, "paragraph_text": "p"}]},
        "object text": {"contexts": [{"title": "T", "paragraph_text": value}]},
    }[where]
    path = _write(tmp_path / "c.jsonl", json.dumps(record))
    _corpus_refused(path, 1, "context")


def test_corpus_bool_id_and_float_id_are_format_errors(tmp_path: Path) -> None:
    _corpus_refused(_write(tmp_path / "a.jsonl", '{"text": "a", "id": true}'), 1, "'id'")
    _corpus_refused(_write(tmp_path / "b.jsonl", '{"text": "a", "_id": 1.5}'), 1, "'_id'")


# --- 4. lone surrogates ------------------------------------------------------------------------


def test_corpus_lone_surrogates_are_replaced_with_one_warning_per_file(tmp_path: Path) -> None:
    path = _write(
        tmp_path / "c.jsonl",
        '{"id": "1", "title": "T\\ud800", "text": "a\\udfffb"}',
        '{"id": "2\\udc00", "text": "ok \\ud83d\\ude00 \\ud800"}',
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        docs = load_corpus(path)
    assert [(d.metadata["title"], d.page_content, d.metadata["id"]) for d in docs] == [
        ("T\ufffd", "a\ufffdb", "1"),
        ("", "ok \U0001f600 \ufffd", "2\ufffd"),
    ]
    assert len(caught) == 1 and f"{path}:1" in str(caught[0].message) and "U+FFFD" in str(caught[0].message)
    for doc in docs:
        (doc.page_content + doc.metadata["title"] + doc.metadata["id"]).encode("utf-8")


@pytest.mark.parametrize("escape", ["\\uDC00", "\\udfff", "\\uDBFF"])
def test_a_line_whose_only_surrogate_is_low_or_upper_case_is_repaired(tmp_path: Path, escape: str) -> None:
    # Found by benchmarks/fuzz.py at 10,000 cases: only \ud8-\udb escapes were looked for.
    path = _write(tmp_path / "c.jsonl", '{"id": "' + escape + '", "text": "0"}')
    with pytest.warns(UserWarning, match="U\\+FFFD"):
        (doc,) = load_corpus(path)
    assert doc.metadata["id"] == "\ufffd"


def test_corpus_lone_surrogates_in_a_json_array_and_qa_paragraphs_are_replaced(tmp_path: Path) -> None:
    path = _write(tmp_path / "c.json", json.dumps([{"context": [["T\ud800", ["One\udbff."]]]}]))
    with pytest.warns(UserWarning, match="U\\+FFFD"):
        docs = load_corpus(path)
    assert (docs[0].metadata["title"], docs[0].page_content) == ("T\ufffd", "One\ufffd.")


def test_an_index_is_built_from_a_corpus_with_lone_surrogates(tmp_path: Path) -> None:
    from searchain_graph.ir.index import build_index, load_index

    path = _write(tmp_path / "c.jsonl", '{"id": "1", "title": "T", "text": "alpha \\ud800 beta"}', '{"text": "gamma"}')
    with pytest.warns(UserWarning):
        build_index(path, tmp_path / "index", retriever="bm25", workers=1)
    hits = load_index(tmp_path / "index").invoke("alpha")
    assert hits and hits[0].page_content == "alpha \ufffd beta"


@pytest.mark.parametrize("auto", [False, True])
@pytest.mark.parametrize("dataset", list(RECORDS))
def test_dataset_lone_surrogates_are_replaced_with_one_warning_per_file(
    tmp_path: Path, dataset: str, auto: bool
) -> None:
    first = RECORDS[dataset]
    second = {**first, "question": "Why\ud800?", list({"_id", "id", "qid"} & set(first))[0]: "q2\udfff"}
    if isinstance(first["answer"], str):
        second["answer"] = "B\udc00b"
    path = _write(tmp_path / "d.jsonl", json.dumps({**first, "question": "Who\ud800?"}), json.dumps(second))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        examples = load_dataset("auto" if auto else dataset, path)  # auto: detection reads the file too
    assert [e["question"] for e in examples] == ["Who\ufffd?", "Why\ufffd?"]
    assert examples[1]["qid"] == "q2\ufffd"
    assert len(caught) == 1 and f"{path}:1" in str(caught[0].message)
    json.dumps(examples, ensure_ascii=False).encode("utf-8")


def test_two_files_with_lone_surrogates_warn_once_each(tmp_path: Path) -> None:
    paths = [_write(tmp_path / f"{n}.jsonl", '{"text": "a\\ud800"}', '{"text": "b\\ud800"}') for n in range(2)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_corpus(paths)
    assert sorted(re.sub(r":\d+.*", "", str(w.message), flags=re.S) for w in caught) == sorted(map(str, paths))
