"""Passage metadata that is not strict JSON: made plain where passages enter the package.

A retriever may put anything in a ``Document``'s metadata (a ``NaN`` score, as a remote index
may send, a ``datetime``, ``bytes``, a ``set``, a numpy scalar, an object, nesting without
end). :func:`~searchain_graph.ir.documents.json_safe` maps it to strict JSON where every
method's retrieved documents become the package's dicts, so that a run finishes, its output is
``json.dumps(..., allow_nan=False)``-able, its checkpoints are written (msgpack), and ``searchain
serve`` answers and stores it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import os
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from searchain_graph import create_searchain_graph
from searchain_graph.baselines import create_direct_retrieval_graph, create_ircot_graph
from searchain_graph.baselines.react_agent import search_tool
from searchain_graph.ir.documents import DEEPER, MAX_DEPTH, MAX_NOTES, json_safe
from searchain_graph.ir.remote import documents_from_reply
from searchain_graph.method.calls import doc_dict
from searchain_graph.method.driver import METADATA_WARNING
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm

np = pytest.importorskip("numpy")

EXAMPLES = int(os.environ.get("SEARCHAIN_FUZZ_EXAMPLES", "200"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SERDE = JsonPlusSerializer()


class Opaque:
    """An object of a retriever's own: no JSON, no msgpack."""

    def __str__(self) -> str:
        return "opaque thing"


class Unprintable:
    """An object whose ``str`` fails too."""

    def __str__(self) -> str:
        raise RuntimeError("no text for you")


def nested(levels: int) -> list[Any]:
    """A list nested ``levels`` deep, built without recursion."""
    top: list[Any] = []
    inner = top
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return top


def depth(value: Any) -> int:
    """How deep the containers of ``value`` go (iteratively)."""
    most, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        most = max(most, level)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, level + 1) for child in children)
    return most


NOW = dt.datetime(2024, 5, 17, 9, 30, 5, tzinfo=dt.UTC)

CASES: dict[str, tuple[Any, Any]] = {
    # name: (the metadata value, what it becomes)
    "nan": (float("nan"), None),
    "inf": (math.inf, None),
    "-inf": (-math.inf, None),
    "datetime": (NOW, "2024-05-17T09:30:05+00:00"),
    "date": (dt.date(2024, 5, 17), "2024-05-17"),
    "time": (dt.time(9, 30), "09:30:00"),
    "bytes": (b"caf\xc3\xa9 \xff", "café \ufffd"),
    "bytearray": (bytearray(b"abc"), "abc"),
    "set": ({3, 1, 2}, [1, 2, 3]),
    "frozenset": (frozenset({"b", "a"}), ["a", "b"]),
    "unsortable set": ({1, "a"}, None),  # a list of both, in the set's order
    "tuple": ((1, (2.5, "x")), [1, [2.5, "x"]]),
    "decimal": (Decimal("0.125"), 0.125),
    "decimal nan": (Decimal("NaN"), None),
    "object": (Opaque(), "opaque thing"),
    "unprintable": (Unprintable(), "<Unprintable>"),
    "non-str keys": ({1: "a", None: "b", (1, 2): "c", 2.5: "d"}, {"1": "a", "null": "b", "[1, 2]": "c", "2.5": "d"}),
    "surrogate": ("a\ud800b", "a\ufffdb"),
    "huge int": (2**70, str(2**70)),
    "deep": (nested(100_000), None),
    "float32": (np.float32(0.5), 0.5),
    "int64": (np.int64(7), 7),
    "bool_": (np.bool_(True), True),
    "float64 nan": (np.float64("nan"), None),
    "array": (np.array([[1.0, np.nan], [np.inf, 2.0]]), [[1.0, None], [None, 2.0]]),
    "datetime64": (np.datetime64("2024-05-17"), "2024-05-17"),
}


class MetadataRetriever(BaseRetriever):
    """The fake BM25 retriever, with ``extra`` added to every document's metadata."""

    extra: dict[Any, Any]

    def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
        return [Document(d.page_content, metadata={**d.metadata, **self.extra}) for d in retriever().invoke(query)]


def extra_of(name: str) -> dict[Any, Any]:
    return {"score": CASES[name][0], "extra": CASES[name][0]}


def strict(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, allow_nan=False)


def assert_plain(values: Any) -> None:
    """Strict JSON, every string UTF-8, and msgpack (LangGraph's checkpoint serializer) takes it."""
    strict(values).encode("utf-8")
    kind, _ = SERDE.dumps_typed({"values": values})  # (None alone is typed "null")
    assert kind == "msgpack"


# -- the function ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_kind_becomes_strict_json(name: str) -> None:
    value, want = CASES[name]
    notes: list[str] = []
    got = json_safe({"field": value}, notes)
    assert_plain(got)
    if name == "deep":
        assert depth(got) == MAX_DEPTH and DEEPER in strict(got)
    elif name == "unsortable set":
        assert sorted(got["field"], key=str) == [1, "a"]
    else:
        assert got == {"field": want}
    if name == "non-str keys":
        assert any("key → text" in n for n in notes)
    elif name == "tuple":
        assert notes == []
    else:
        assert notes and all(n.startswith("field") for n in notes), notes
    assert json_safe(got) == got  # converted once, it stays


def test_strict_json_comes_back_equal_and_is_not_noted() -> None:
    value = {"id": "p1", "title": "Kevin Drew", "score": 12.5, "rank": 3, "tags": ["a", "b"], "x": None, "ok": True}
    notes: list[str] = []
    assert json_safe(value, notes) == value
    assert notes == []
    assert json_safe({"t": (1, 2)}, notes) == {"t": [1, 2]} and notes == []  # a tuple is a list to JSON anyway


def test_cycles_and_deep_nesting_end_at_the_depth_limit() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    got = json_safe(loop)
    assert depth(got) == MAX_DEPTH and DEEPER in strict(got)
    deep_dict: dict[str, Any] = {}
    inner = deep_dict
    for _ in range(100_000):
        inner["k"] = {}
        inner = inner["k"]
    assert_plain(json_safe(deep_dict))
    # A set of very deep tuples: sorting them would recurse without end; they are listed instead.
    tower: Any = ()
    for _ in range(100_000):
        tower = (tower,)
    assert_plain(json_safe({tower, (tower,)}))


def test_methods_that_fail_or_loop_give_text() -> None:
    class Broken:
        def tolist(self) -> Any:
            raise ValueError("no")

        def __str__(self) -> str:
            return "broken"

    class Itself:
        def item(self) -> Any:
            return self

        def __str__(self) -> str:
            return "itself"

    assert json_safe([Broken(), Itself()]) == ["broken", "itself"]


def test_notes_are_bounded() -> None:
    notes: list[str] = []
    json_safe({f"k{i}": float("nan") for i in range(100)}, notes)
    assert len(notes) == MAX_NOTES
    notes = []
    json_safe({"v": [float("nan")] * 1000}, notes)
    assert notes == ["v[] (NaN → null)"]


def test_a_remote_index_replying_nan_gives_a_null_score() -> None:
    reply = json.loads('{"topk": [{"text": "Kevin Drew | Kevin Drew was born in Toronto.", "pid": 2, "score": NaN}]}')
    (doc,) = documents_from_reply("http://index", reply, 1)
    assert math.isnan(doc.metadata["score"])
    notes: list[str] = []
    plain = doc_dict(doc, notes)
    assert plain["metadata"] == {"pid": 2, "score": None, "title": "Kevin Drew", "id": "2"}
    assert notes == ["score (NaN → null)"]


# -- Hypothesis -------------------------------------------------------------------------------------

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**64 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(st.characters(exclude_categories=["Cs"])),
)
STRICT_JSON = st.recursive(
    JSON_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(st.characters(exclude_categories=["Cs"])), children)
    ),
    max_leaves=30,
)
HASHABLE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(),
    st.text(),
    st.binary(max_size=8),
    st.datetimes(),
    st.decimals(allow_nan=False),  # a signalling NaN cannot be hashed
    st.tuples(st.integers(), st.text()),
)
ODD_SCALARS = st.one_of(
    HASHABLE,
    st.decimals(),
    st.dates(),
    st.times(),
    st.datetimes(timezones=st.just(dt.UTC)),
    st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    st.builds(Opaque),
    st.builds(Unprintable),
    st.floats(width=32).map(np.float32),
    st.integers(-(2**63), 2**63 - 1).map(np.int64),
    st.booleans().map(np.bool_),
    st.lists(st.floats(), max_size=4).map(np.array),
)
ODD = st.recursive(
    ODD_SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.tuples(children, children),
        st.dictionaries(HASHABLE, children, max_size=4),
        st.sets(HASHABLE, max_size=4),
        st.frozensets(HASHABLE, max_size=4),
    ),
    max_leaves=30,
)


@FUZZ
@given(ODD)
def test_anything_becomes_strict_json(value: Any) -> None:
    got = json_safe(value)
    assert_plain(got)
    assert json_safe(got) == got


@FUZZ
@given(STRICT_JSON)
def test_strict_json_is_kept(value: Any) -> None:
    notes: list[str] = []
    assert json_safe(value, notes) == value
    assert notes == []


# -- graph runs ------------------------------------------------------------------------------------


def searchain(extra: dict[Any, Any], **kwargs: Any) -> Any:
    return create_searchain_graph(
        tree_llm(), MetadataRetriever(extra=extra), ScriptedReader(TREE_READS), confidence_threshold=1.5, **kwargs
    )


def metadata_warnings(out: dict[str, Any]) -> list[str]:
    return [w for w in out["warnings"] if METADATA_WARNING in w]


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_run_finishes_and_checkpoints(name: str) -> None:
    graph = searchain(extra_of(name), checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": name}}
    out = graph.invoke({"question": QUESTION}, config)
    assert out["answer"] == "Toronto Coach Terminal"
    assert_plain(out)
    assert_plain(graph.get_state(config).values)
    warned = metadata_warnings(out)
    if name == "tuple":
        assert warned == []
    else:
        assert len(warned) == 1 and "converted: score" in warned[0], out["warnings"]  # one a run, naming the field
    documents = [r["document"] for r in out["references"] if r["document"]]
    assert documents and all(d["metadata"]["title"] for d in documents)
    if name not in ("deep", "unsortable set"):
        assert all(d["metadata"]["score"] == d["metadata"]["extra"] == CASES[name][1] for d in documents)


@pytest.mark.parametrize("name", ["nan", "float32", "int64", "datetime", "deep", "non-str keys"])
def test_an_async_run_with_the_sqlite_saver_checkpoints(name: str, tmp_path: Path) -> None:
    pytest.importorskip("langgraph.checkpoint.sqlite")
    from searchain_graph.serve.sqlite_store import open_sqlite_checkpointer

    async def scenario() -> tuple[Any, Any]:
        saver = await open_sqlite_checkpointer(tmp_path / "checkpoints.sqlite")
        try:
            graph = searchain(extra_of(name), checkpointer=saver)
            config = {"configurable": {"thread_id": "t"}}
            out = await graph.ainvoke({"question": QUESTION}, config)
            return out, (await graph.aget_state(config)).values
        finally:
            await saver.conn.close()

    out, stored = asyncio.run(scenario())
    assert out["answer"] == "Toronto Coach Terminal" and stored["answer"] == out["answer"]
    assert_plain(stored)


@pytest.mark.parametrize("name", ["nan", "float32", "bytes", "set"])
def test_cached_retrieval_converts_too(name: str) -> None:
    graph = searchain(extra_of(name), cache=InMemoryCache(), checkpointer=InMemorySaver())
    first = graph.invoke({"question": QUESTION}, {"configurable": {"thread_id": "1"}})
    second = graph.invoke({"question": QUESTION}, {"configurable": {"thread_id": "2"}})
    assert second["usage"]["retrieval_cache_hits"] == second["usage"]["retrieval_calls"] > 0
    for out in (first, second):
        assert_plain(out)
        assert out["answer"] == "Toronto Coach Terminal"
    assert len(metadata_warnings(first)) == 1  # the misses say it; the cache holds the plain form


@pytest.mark.parametrize("name", ["nan", "float32", "datetime", "object"])
def test_baselines_convert_too(name: str) -> None:
    ret = MetadataRetriever(extra=extra_of(name))
    model = RuleChatModel(respond=lambda m: "Kevin Drew was born in Toronto. So the answer is: Toronto.")
    for graph in (create_direct_retrieval_graph(model, ret), create_ircot_graph(model, ret, max_steps=2)):
        out = graph.invoke({"question": QUESTION})
        assert_plain(out)
        assert out["passages"] and all(p["metadata"]["score"] == CASES[name][1] for p in out["passages"])
        assert len(metadata_warnings(out)) == 1
    text, artifact = search_tool(ret).func("Kevin Drew")  # type: ignore[attr-defined]
    assert text and artifact
    assert_plain(artifact)


# -- searchain serve --db ----------------------------------------------------------------------------


def served(
    run_extra: dict[Any, Any], tmp_path: Path
) -> tuple[str, dict[str, Any], list[dict[str, Any]], Sequence[Any]]:
    pytest.importorskip("starlette")
    pytest.importorskip("httpx")
    pytest.importorskip("langgraph.checkpoint.sqlite")
    from starlette.testclient import TestClient

    from searchain_graph.serve import create_app
    from searchain_graph.serve.sqlite_store import SqliteRunStore
    from tests.helpers import read_events

    db = tmp_path / "runs.sqlite"
    with TestClient(create_app(searchain(run_extra), db=db), base_url="http://127.0.0.1") as client:
        run = client.post("/runs", json={"question": QUESTION}).json()
        events = read_events(client, run["events"])
        reply = client.get(f"/runs/{run['run_id']}")
        assert reply.status_code == 200, reply.text
        summary = reply.json()
    return run["run_id"], summary, events, SqliteRunStore(db).load(10)


@pytest.mark.parametrize("name", ["nan", "float32", "int64", "bool_", "array", "datetime", "bytes", "deep"])
def test_serve_with_a_db_ends_the_run_and_stores_it(name: str, tmp_path: Path) -> None:
    run_id, summary, events, stored = served(extra_of(name), tmp_path)
    assert events[-1]["event"] == "done", events[-1]
    assert summary["status"] == "done" and summary["output"]["answer"] == "Toronto Coach Terminal"
    assert [(r.id, r.status) for r in stored] == [(run_id, "done")]
