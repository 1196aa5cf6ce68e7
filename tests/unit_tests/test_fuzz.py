"""Property tests (Hypothesis) of the parsers and the file readers: generated input, stated invariants.

CI runs ``SEARCHAIN_FUZZ_EXAMPLES`` cases per property (default 200); ``benchmarks/fuzz.py`` runs
10,000 each and prints the counts (``docs/reliability.md`` has the figures). The only exceptions
allowed are the ones the functions document: a corpus or dataset file that cannot be read raises
``CorpusFormatError`` / ``DatasetFormatError`` naming the file and line, nothing else.

Invariants:

* ``parse_chain``: nodes numbered 1..n without a gap, at most ``MAX_NODES``; every word of a
  node's query and answer and of the final content is in the reply (Markdown emphasis aside):
  nothing is parsed from outside the reply.
* ``extract_final_answer``: ``None`` or a non-empty piece of the text (citations, nested ones
  included, aside); for
  yes/no and fact checking, a label the text states.
* ``drop_invalid_citations``: every citation kept is in ``1..count`` and was a citation of the
  text (dropping one never makes a new one, ``[1[5]0]``); kept and dropped together are every
  citation of the text; dropping again changes nothing.
* a whole SearChain run, whatever the LLM replies (up to 1 MB, lone surrogates, citations of
  thousands of digits, nested brackets): it ends with an answer and final content within their
  limits, every string encodable as UTF-8, and no answer that is a bare marker.
* ``normalize_answer``: whitespace collapsed, no article left, idempotent.
* corpus and dataset files: passages with text, a title and an id (questions with unique ids),
  every string encodable as UTF-8 and at most one warning a file, or the format error naming the
  file (and the line, for JSON that is not valid). The files mix valid records, arbitrary JSON and
  hostile records: integers of 1 to 10,000 digits (numbers, and strings in id fields), ``NaN`` and
  ``1e400``, JSON nested up to 5,000 deep, any JSON type in any field of a valid record of each
  format, and unpaired surrogates and other odd code points as escapes.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from searchain_graph.evaluation.dataset_loading import iter_dataset  # noqa: E402
from searchain_graph.evaluation.datasets import DatasetFormatError  # noqa: E402
from searchain_graph.ir.corpus import CorpusFormatError, iter_corpus  # noqa: E402
from searchain_graph.method.parsing import (  # noqa: E402
    MAX_NODES,
    citations,
    drop_invalid_citations,
    extract_final_answer,
    normalize_answer,
    parse_chain,
    strip_citations,
)

EXAMPLES = int(os.environ.get("SEARCHAIN_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MARKERS = [
    "[Query 1]:", "[Query 2]:", "[Query 12]", "[Answer 1]:", "[Answer 2]:", "[Answer]:", "[Unsolved Query]:",
    "[Final Content]:", "[Question]:", "[query 3]:", "[ Answer 3 ]：", "[1]", "[2]", "[0]", "[999]", "[1,2]",
    "So the final answer is", "the answer is", "Yes", "No", "SUPPORTS", "REFUTES", "\n", "**", "- ", "1. ",
    "If you don't know the answer:", "[", "]", ":", ".", "…", "ﬁ", "İ", "\u200b", "\x00",
]  # fmt: skip
"""Pieces of the CoQ format, Unicode with odd normalisation, and separators: replies built from
these reach the parser's corner cases far more often than random text does."""

chain_text = st.lists(st.one_of(st.sampled_from(MARKERS), st.text(max_size=30)), max_size=60).map("".join)

# The classes Hypothesis's default strategies never produce:
digits = st.integers(min_value=1, max_value=10_000).flatmap(
    lambda n: st.sampled_from(["9" * n, "1" + "0" * (n - 1), ("1234567890" * (n // 10 + 1))[:n]])
)
"""Integers of 1 to 10,000 digits (Python makes no ``int`` of more than 4,300 from text)."""
bracketed_digits = st.recursive(
    st.one_of(st.integers(0, 40).map(str), digits).map(lambda d: f"[{d}]"),
    lambda inner: st.tuples(
        st.sampled_from(["[", "[1", "[9", "", " ", "[["]),
        inner,
        st.sampled_from(["]", "0]", "", " ]", "]]", "[2]"]),
    ).map("".join),
    max_leaves=12,
)
"""Citations nested in citations, and unbalanced brackets around digits (``[1[5]0]``, ``[[3]``)."""
surrogates = st.text(st.characters(categories=["Cs"]), min_size=1, max_size=4)
"""Lone surrogates (U+D800..U+DFFF), which no UTF-8 encoder takes."""
huge_reply = st.tuples(
    st.integers(min_value=0, max_value=1_000_000), st.sampled_from(["x", "word ", "[1]", "[Query 1]: "])
)
"""Replies of up to 1 MB."""
hostile_text = st.lists(
    st.one_of(st.sampled_from(MARKERS), st.text(max_size=30), bracketed_digits, surrogates), max_size=60
).map("".join)
any_text = st.one_of(st.text(max_size=400), chain_text, hostile_text)


@FUZZ
@given(any_text)
def test_parse_chain(text: str) -> None:
    parsed = parse_chain(text)
    plain = re.sub(r"(\*\*|__|`)", "", text)  # the parser drops Markdown emphasis, nothing else
    assert [n["index"] for n in parsed.nodes] == list(range(1, len(parsed.nodes) + 1))
    assert len(parsed.nodes) <= MAX_NODES
    for node in parsed.nodes:
        assert isinstance(node["query"], str) and isinstance(node["unsolved"], bool)
        assert node["answer"] is None or isinstance(node["answer"], str)
        for field in (node["query"], node["answer"] or ""):
            assert all(word in plain for word in field.split()), (field, text)
    if parsed.final_content is not None:
        assert all(word in plain for word in parsed.final_content.split()), (parsed.final_content, text)
    assert all(isinstance(w, str) for w in parsed.warnings)


@FUZZ
@given(any_text, st.sampled_from(["multihop", "yesno", "fact", "longform", "slot_filling"]))
def test_extract_final_answer(text: str, task: str) -> None:
    answer = extract_final_answer(text, task)
    assert answer is None or (isinstance(answer, str) and answer.strip())
    if answer is None:
        return
    if task == "fact" and answer in ("SUPPORTS", "REFUTES"):
        assert answer[:6].lower() in text.lower()
    elif task == "yesno" and answer in ("Yes", "No"):
        assert answer.lower() in text.lower()
    else:
        assert answer in strip_citations(text)


@FUZZ
@given(any_text, st.integers(min_value=0, max_value=40))
def test_drop_invalid_citations(text: str, count: int) -> None:
    cleaned, bad = drop_invalid_citations(text, count)
    kept, before = citations(cleaned), citations(text)
    assert all(1 <= n <= count for n in kept)
    assert sorted(kept + [n for n in bad if n != -1]) == sorted(before)  # none made, none lost
    remaining = iter(before)
    assert all(any(n == m for m in remaining) for n in kept)  # kept in order, each one of the text's
    assert drop_invalid_citations(cleaned, count) == (cleaned, [])


@FUZZ
@given(any_text)
def test_normalize_answer(text: str) -> None:
    norm = normalize_answer(text)
    assert norm == " ".join(norm.split())
    assert not re.search(r"\b(a|an|the)\b", norm)
    assert normalize_answer(norm) == norm


# -- whole runs -----------------------------------------------------------------------------------


class _Replies:
    """One graph for every case: the LLM replies whatever the case sets (``text``), to every prompt."""

    def __init__(self) -> None:
        from langchain_core.messages import BaseMessage

        from searchain_graph import create_searchain_graph
        from tests.fakes import TREE_READS, RuleChatModel, ScriptedReader, retriever

        self.text = ""

        def respond(messages: list[BaseMessage]) -> str:
            return self.text

        self.graph = create_searchain_graph(
            RuleChatModel(respond=respond), retriever(), ScriptedReader(TREE_READS), max_rounds=2
        )


_RUNS: list[_Replies] = []


def _graph() -> _Replies:
    if not _RUNS:
        _RUNS.append(_Replies())
    return _RUNS[0]


@FUZZ
@given(st.one_of(any_text, huge_reply.map(lambda r: r[1] * (r[0] // len(r[1])))), st.one_of(st.just(""), surrogates))
def test_any_reply_gives_a_bounded_encodable_run(reply: str, noise: str) -> None:
    from searchain_graph.method.limits import MAX_ANSWER_CHARS, MAX_FINAL_CONTENT_CHARS
    from searchain_graph.method.parsing import clean_answer

    runs = _graph()
    runs.text = reply
    out = runs.graph.invoke({"question": "Where was the performer of Spirit If... born?" + noise})
    assert len(out["answer"]) <= MAX_ANSWER_CHARS and len(out["final_content"]) <= MAX_FINAL_CONTENT_CHARS
    assert out["answer"] == clean_answer(out["answer"])  # no marker, no prompt fragment
    if not out["answer"]:
        assert any("no answer" in w for w in out["warnings"])
    json.dumps(out, ensure_ascii=False, allow_nan=False).encode("utf-8")
    assert 1 <= out["rounds"] <= 2


# -- files -------------------------------------------------------------------------------------

json_scalar = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
json_value = st.recursive(
    json_scalar,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
passage = st.fixed_dictionaries(
    {"text": st.one_of(st.text(max_size=40), json_value)},
    optional={"id": json_value, "title": json_value, "contents": json_value, "paragraph_text": json_value},
)
qa_record = st.fixed_dictionaries(
    {"question": st.text(max_size=20)},
    optional={
        "contexts": json_value,
        "paragraphs": st.lists(st.fixed_dictionaries({"title": json_value, "paragraph_text": json_value})),
        "context": st.lists(st.tuples(st.text(max_size=10), st.lists(st.text(max_size=10), max_size=3))),
        "answer": json_value,
        "_id": st.text(max_size=5),
        "id": json_value,
    },
)

# -- hostile file content: numbers, nesting, types and code points no honest file has --


def _number_text(length: int, seed: int, sign: str) -> str:
    return sign + str(1 + seed % 9) + str(seed % 10) * (length - 1)


long_integer = st.builds(_number_text, st.integers(1, 10_000), st.integers(0, 99), st.sampled_from(["", "-"]))
"""JSON integers of 1 to 10,000 digits (Python refuses to convert more than 4,300), as JSON text."""
non_finite = st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1E999", "0.1e310"])
"""Numbers Python's ``json`` accepts or overflows to ``inf``, as JSON text."""
code_point_escape = st.one_of(
    st.sampled_from(["\\ud800", "\\udfff", "\\udc00", "\\uDBFF", "\\ud83d\\ude00", "\\ude00\\ud83d", "\\ud7ff"]),
    st.sampled_from(["\\u0000", "\\ufffe", "\\uffff", "\\\\ud800", "\\ud800\\\\udc00", "\\u200b", "\\u2028"]),
    st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04x}"),
    st.text(max_size=8).map(lambda t: json.dumps(t)[1:-1]),
)
escaped_string = st.lists(code_point_escape, max_size=6).map(lambda parts: '"' + "".join(parts) + '"')
"""JSON strings holding unpaired surrogates and other odd code points, as escapes."""


def _nest(depth: int, opener: str, inner: str, closed: bool) -> str:
    head = "[" * depth if opener == "[" else '{"k": ' * depth
    return head + inner + (("]" if opener == "[" else "}") * depth if closed else "")


deep_json = st.builds(
    _nest, st.integers(1, 5_000), st.sampled_from("[{"), st.sampled_from(['"X-1"', "1", "[]", "null"]), st.booleans()
)
"""JSON nested 1 to 5,000 deep, closed or not, as JSON text."""
hostile_json = st.one_of(
    json_value.map(json.dumps),
    long_integer,
    long_integer.map(lambda digits: f'"{digits}"'),
    non_finite,
    escaped_string,
    deep_json,
)
"""Any JSON value text, weighted towards the hostile classes: a field's value in a mutated record."""

FILE_TEMPLATES: dict[str, dict[str, object]] = {
    "passage": {"id": "p1", "title": "Title", "text": "Some text."},
    "flashrag": {"id": 7, "contents": "Title\nSome text."},
    "hotpotqa": {
        "_id": "q1", "question": "Who?", "answer": "Ann", "type": "bridge", "level": "easy",
        "context": [["T", ["One.", "Two."]]], "supporting_facts": [["T", 0]],
    },
    "2wikimultihopqa": {
        "_id": "q2", "question": "Who?", "answer": "Ann", "type": "compositional",
        "context": [["T", ["One."]]], "supporting_facts": [["T", 0]], "evidences": [["A", "mother", "B"]],
    },
    "musique": {
        "id": "2hop__1_2", "question": "Who?", "answer": "Ann", "answer_aliases": ["Annie"], "answerable": True,
        "paragraphs": [{"idx": 0, "title": "T", "paragraph_text": "Text.", "is_supporting": True}],
        "question_decomposition": [
            {"id": 1, "question": "Who is X?", "answer": "Y", "paragraph_support_idx": 0},
            {"id": 2, "question": "Who is #1 's mother?", "answer": "Ann", "paragraph_support_idx": 0},
        ],
    },
    "ircot": {
        "question_id": "3hop1__1", "question_text": "Who?", "type": "bridge",
        "answers_objects": [{"number": "", "date": {"day": ""}, "spans": ["Ann"]}],
        "contexts": [{"id": 0, "title": "T", "paragraph_text": "Text.", "is_supporting": True}],
    },
    "strategyqa": {
        "qid": "q3", "term": "X", "description": "A thing", "question": "Is it?", "answer": True,
        "facts": ["A fact."], "decomposition": ["Is #1?"], "evidence": [[[["X-1"]], ["operation"]]],
    },
}  # fmt: skip
"""One valid record of each format the corpus and dataset readers take; the fuzzer mutates them."""


def _paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Every place in ``value`` (a template) whose value can be replaced, and a new key beside each object's."""
    found: list[tuple[object, ...]] = [prefix] if prefix else []
    if isinstance(value, dict):
        found.append((*prefix, "extra"))
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for n, item in enumerate(value):
            found += _paths(item, (*prefix, n))
    return found


def _mutated(template: str, changes: list[tuple[int, str]]) -> str:
    """``template`` as JSON text with the values at some of its places replaced by JSON texts."""
    record = json.loads(json.dumps(FILE_TEMPLATES[template]))
    paths = _paths(record)
    texts: dict[str, str] = {}
    for n, (choice, text) in enumerate(changes):
        *parents, last = paths[choice % len(paths)]
        node = record
        for step in parents:
            if not isinstance(node, (dict, list)) or (isinstance(node, list) and not isinstance(step, int)):
                break
            try:
                node = node[step]  # type: ignore[index]
            except (KeyError, IndexError, TypeError):
                break
        else:
            marker = f"\x00{n}\x00"
            if isinstance(node, dict):
                node[last] = marker
            elif isinstance(node, list) and isinstance(last, int) and last < len(node):
                node[last] = marker
            texts[json.dumps(marker)] = text
    line = json.dumps(record)
    for marker, text in texts.items():
        line = line.replace(marker, text)
    return line


hostile_record = st.builds(
    _mutated,
    st.sampled_from(list(FILE_TEMPLATES)),
    st.lists(st.tuples(st.integers(0, 10_000), hostile_json), min_size=1, max_size=3),
)
"""A valid record of some format with one to three of its values (or new keys) made hostile."""
hostile_line = st.one_of(hostile_record, hostile_json)


def _strings(value: object) -> Iterator[str]:
    """Every string in ``value`` (keys too), without recursion."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            stack.extend(node.keys())
            stack.extend(node.values())
        elif isinstance(node, (list, tuple)):
            stack.extend(node)


def _encodable(value: object) -> None:
    """Every string of ``value`` encodes as UTF-8 (no lone surrogate got through)."""
    for text in _strings(value):
        text.encode("utf-8")


def _check_passages(docs: list[Any], caught: list[Any], path: Path) -> None:
    """Passages read from a fuzzed file: text, a title and an id, all encodable; at most one warning."""
    _surrogate_warnings(caught, path)
    for doc in docs:
        assert doc.page_content.strip() and isinstance(doc.metadata["title"], str)
        assert isinstance(doc.metadata["id"], str)
        _encodable([doc.page_content, doc.metadata])


def _surrogate_warnings(caught: list[warnings.WarningMessage], path: Path) -> None:
    """At most one warning for the file, and it names the file."""
    said = [w for w in caught if "U+FFFD" in str(w.message)]
    assert len(said) <= 1, [str(w.message)[:200] for w in said]
    assert all(str(path) in str(w.message) for w in said)


line = st.one_of(
    passage.map(json.dumps),
    qa_record.map(json.dumps),
    json_value.map(json.dumps),
    st.text(max_size=60).filter(lambda t: "\n" not in t and "\r" not in t),
    st.just(""),
    hostile_line,
)
raw_bytes = st.binary(max_size=200)
_DIR = tempfile.TemporaryDirectory(prefix="searchain-fuzz-")


def _write(lines: list[str], noise: bytes | None, suffix: str) -> Path:
    data = "\n".join(lines).encode("utf-8", "surrogatepass") + (noise or b"")
    handle = tempfile.NamedTemporaryFile(delete=False, suffix=suffix, dir=_DIR.name)
    with handle:
        handle.write(data)
    return Path(handle.name)


@FUZZ
@given(st.lists(line, max_size=8), st.one_of(st.none(), raw_bytes), st.sampled_from([".jsonl", ".json", ".tsv"]))
def test_corpus_files_give_passages_or_a_corpus_format_error(
    lines: list[str], noise: bytes | None, suffix: str
) -> None:
    path = _write(lines, noise, suffix)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            docs = list(iter_corpus(path))
    except CorpusFormatError as exc:
        assert str(path) in str(exc)
        return
    finally:
        path.unlink()
    _check_passages(docs, caught, path)


@FUZZ
@given(
    st.lists(st.one_of(line, qa_record.map(json.dumps), hostile_record), max_size=6),
    st.one_of(st.none(), raw_bytes),
    st.sampled_from(["hotpotqa", "2wikimultihopqa", "musique", "strategyqa", "auto"]),
)
def test_dataset_files_give_examples_or_a_dataset_format_error(
    lines: list[str], noise: bytes | None, dataset: str
) -> None:
    path = _write(lines, noise, ".jsonl")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            examples = list(iter_dataset(dataset, path))
    except DatasetFormatError as exc:
        assert str(path) in str(exc)
        return
    finally:
        path.unlink()
    _surrogate_warnings(caught, path)
    assert len({e["qid"] for e in examples}) == len(examples)
    for example in examples:
        assert isinstance(example["question"], str)
        json.dumps(example, allow_nan=False, ensure_ascii=False).encode("utf-8")


def _hostile_file(lines: list[str], layout: str) -> Path:
    if layout == ".json":
        lines = ["[", ",\n".join(lines), "]"]
    return _write(lines, None, layout)


@FUZZ
@given(
    st.lists(st.one_of(hostile_record, hostile_line, line), min_size=1, max_size=3),
    st.sampled_from([".jsonl", ".json"]),
    st.sampled_from(["corpus", "hotpotqa", "2wikimultihopqa", "musique", "strategyqa", "auto"]),
)
def test_hostile_files_give_records_or_the_format_error_naming_the_file(
    lines: list[str], layout: str, reader: str
) -> None:
    path = _hostile_file(lines, layout)
    error = CorpusFormatError if reader == "corpus" else DatasetFormatError
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if reader == "corpus":
                docs, examples = list(iter_corpus(path)), []
            else:
                docs, examples = [], list(iter_dataset(reader, path))
    except error as exc:
        message = str(exc)
        assert message.startswith(str(path)), message[:300]
        if "not valid JSON" in message and layout == ".jsonl":
            assert re.match(rf"{re.escape(str(path))}:\d+: ", message), message[:300]
        return
    finally:
        path.unlink()
    _check_passages(docs, caught, path)
    for example in examples:
        assert isinstance(example["qid"], str) and example["question"]
        json.dumps(example, allow_nan=False, ensure_ascii=False).encode("utf-8")
    assert len({e["qid"] for e in examples}) == len(examples)


# -- review decisions ----------------------------------------------------------------------------
# What a client may send to a run paused for review: decisions, near-misses (typos, other cases,
# an edit without its answer), names of the waiting correction, of another and of none, and any
# JSON value, deep or odd.
decision_word = st.one_of(
    st.sampled_from(["accept", "reject", "edit", "acept", "Accept", "ACCEPT", " accept", "accept\n", "", "yes"]),
    st.text(max_size=12),
    surrogates,
)
decision_name = st.one_of(
    st.just({}),
    st.just({"id": "round-1-node-2"}),  # the waiting correction
    st.just({"round": 1, "node": 2}),
    st.fixed_dictionaries({"id": st.one_of(st.text(max_size=20), st.integers(), st.none(), json_value)}),
    st.fixed_dictionaries({"round": st.one_of(st.integers(-2, 5), st.text(max_size=3)), "node": st.integers(-2, 9)}),
)
review_value = st.one_of(
    decision_word,
    st.builds(
        lambda word, answer, name: {"decision": word, **({} if answer is None else {"answer": answer}), **name},
        decision_word,
        st.one_of(st.none(), st.text(max_size=30), json_value, st.just("x" * 3000)),
        decision_name,
    ),
    json_value,
    deep_json.map(lambda text: {"decision": "accept", "extra": text}),
)


class _Review:
    """One review graph for every case; each case pauses a thread of its own."""

    def __init__(self) -> None:
        from langgraph.checkpoint.memory import InMemorySaver

        from searchain_graph import create_searchain_graph
        from tests.fakes import TREE_READS, ScriptedReader, retriever, tree_llm

        self.graph = create_searchain_graph(
            tree_llm(), retriever(), ScriptedReader(TREE_READS), confidence_threshold=1.5,
            checkpointer=InMemorySaver(), review=True,
        )  # fmt: skip
        self.threads = 0


_REVIEWS: list[_Review] = []


@FUZZ
@given(review_value)
def test_any_review_decision_is_taken_whole_or_refused_leaving_the_correction_answerable(value: object) -> None:
    from langgraph.types import Command

    from searchain_graph.method.review import review_decision
    from tests.fakes import QUESTION

    if not _REVIEWS:
        _REVIEWS.append(_Review())
    runs = _REVIEWS[0]
    runs.threads += 1
    config = {"configurable": {"thread_id": f"fuzz-review-{runs.threads}"}}
    (pause,) = runs.graph.invoke({"question": QUESTION}, config)["__interrupt__"]
    try:
        expected = review_decision(value, pause.value)
    except ValueError:
        expected = None
    if expected is None:
        with pytest.raises(ValueError):
            runs.graph.invoke(Command(resume=value), config)
        state = runs.graph.get_state(config)  # nothing recorded: the same correction still waits
        assert state.values["review_pending"] == pause.value and not state.values.get("reviews")
        value = "reject"
        expected = review_decision(value)
    out = runs.graph.invoke(Command(resume=value), config)
    decided = runs.graph.get_state(config).values["reviews"][pause.value["id"]]
    assert {k: v for k, v in decided.items() if k not in ("round", "node")} == expected.record()
    assert "__interrupt__" in out or out["tree"][0]["checks"][1]["review"] == expected.record()


# -- results files cut anywhere ----------------------------------------------------------------
result_record = st.fixed_dictionaries(
    {
        "qid": st.text(max_size=6),
        "method": st.sampled_from(["searchain", "ircot", "cot"]),
        "answer": st.text(max_size=12),
    }
)


@FUZZ
@given(st.lists(result_record, min_size=1, max_size=4), st.data())
def test_a_results_file_cut_at_any_byte_reads_as_its_whole_records(records: list[dict[str, str]], data: Any) -> None:
    """A run killed at any byte, inside a UTF-8 character too: every whole record is read, and kept on resume."""
    from searchain_graph.evaluation.harness import drop_torn_tail, read_records

    lines = [json.dumps(r, ensure_ascii=False).encode("utf-8") for r in records]
    blob = b"\n".join(lines) + b"\n"
    cut = data.draw(st.integers(0, len(blob)), label="cut")
    kept, end = 0, 0
    for line in lines:  # a cut record never parses; one cut only before its newline is whole
        end += len(line)
        if end > cut:
            break
        kept += 1
        end += 1
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "results.jsonl"
        path.write_bytes(blob[:cut])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            assert read_records(path) == records[:kept]
            drop_torn_tail(path)  # what a resumed run does before it appends
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"qid": "next"}) + "\n")
            assert read_records(path) == [*records[:kept], {"qid": "next"}]


# -- a remote index's replies --------------------------------------------------------------------
hit = st.fixed_dictionaries(
    {"text": st.one_of(st.text(max_size=30), json_value)},
    optional={
        "title": st.one_of(st.text(max_size=10), json_value),
        "pid": json_value,
        "score": st.one_of(st.floats(), st.sampled_from([float("nan"), float("inf")])),
        "extra": json_value,
    },
)
reply_body = st.one_of(
    st.fixed_dictionaries({"topk": st.lists(hit, max_size=4)}).map(lambda r: json.dumps(r).encode()),
    hostile_json.map(lambda text: f'{{"topk": [{{"text": "t", "meta": {text}}}]}}'.encode()),
    hostile_json.map(str.encode),
    st.binary(max_size=60),
    st.text(max_size=60).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


@FUZZ
@given(reply_body, st.sampled_from(["application/json", "text/html; charset=utf-8", ""]))
def test_any_reply_of_a_remote_index_gives_documents_or_the_error_naming_the_url(body: bytes, kind: str) -> None:
    """Passages whose metadata the package holds as strict JSON, or the error naming the URL (not its password)."""
    from searchain_graph.ir.remote import RemoteRetrievalError, RemoteRetriever
    from searchain_graph.method.calls import doc_dict

    remote = RemoteRetriever(url="http://reader:secret@127.0.0.1:9/")
    try:
        docs = remote._documents(body, kind, 3)
    except RemoteRetrievalError as error:
        assert "127.0.0.1:9" in str(error) and "secret" not in str(error)
        return
    assert len(docs) <= 3 and all(isinstance(d.page_content, str) for d in docs)
    for doc in docs:
        json.dumps(doc_dict(doc), allow_nan=False)
