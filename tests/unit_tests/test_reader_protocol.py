"""The reader interface: passages as ``Passage`` (title and text apart), old-style readers, DPR's layout."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from searchain_graph import create_searchain_graph
from searchain_graph.ir.readers import base
from searchain_graph.ir.readers.base import (
    Passage,
    ReaderOutput,
    aread_pairs,
    as_passage,
    passage_of,
    read_pairs,
    reads_passages,
)
from searchain_graph.ir.readers.dpr import DPRReader
from searchain_graph.ir.readers.extractive import ExtractiveQAReader
from searchain_graph.ir.readers.llm import LLMReader
from tests.fakes import CHAIN_FIXED, PASSAGES, QUESTION, RuleChatModel, ScriptedReader, retriever, tracing_reply
from tests.helpers import assert_reads_close
from tests.tiny_models import build_tiny_dpr
from tests.unit_tests.test_extractive import MAX_LENGTH, MAX_QUERY, STRIDE, VOCAB

KEVIN = Passage("Kevin Drew (born 9 September 1976 in Toronto) is a Canadian musician.", title="Kevin Drew")
UNTITLED = Passage("Kevin Drew was a musician.\nHe was born in Toronto.")
"""A passage without a title whose first line is text, not a title."""


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees the once-only deprecation warnings afresh."""
    monkeypatch.setattr(base, "_warned", set())


def deprecations(calls: Any) -> list[warnings.WarningMessage]:
    """The DeprecationWarnings that ``calls()`` emits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        calls()
    return [w for w in caught if issubclass(w.category, DeprecationWarning)]


# -- Passage and its constructors -----------------------------------------------------------------


def test_passage_of_a_document_takes_the_title_from_metadata() -> None:
    doc = Document(page_content="Some text.\nMore.", metadata={"title": " Kevin Drew ", "id": "p1"})
    assert passage_of(doc) == Passage("Some text.\nMore.", "Kevin Drew")
    assert passage_of({"page_content": doc.page_content, "metadata": doc.metadata}) == passage_of(doc)
    assert passage_of(Document(page_content="Text.", metadata={"id": "x"})) == Passage("Text.", "")
    assert passage_of(Document(page_content="Text.", metadata={"title": None})) == Passage("Text.", "")
    assert passage_of({"page_content": "Text."}) == Passage("Text.")
    assert passage_of(KEVIN) is KEVIN
    with pytest.raises(TypeError, match="Passage"):
        passage_of(3)


def test_retrieved_documents_keep_their_title() -> None:
    # Retrievers return the stored Document with the corpus' metadata, "title" included.
    docs = retriever().invoke("Where was Kevin Drew born?")
    assert passage_of(docs[0]) == Passage(PASSAGES[1].page_content, "Kevin Drew")


def test_legacy_string_and_joined() -> None:
    assert passage_of("Title\nSome text\nmore") == Passage("Some text\nmore", "Title")
    assert passage_of("Only text") == Passage("Only text")
    assert KEVIN.joined() == f"Kevin Drew\n{KEVIN.text}"
    assert UNTITLED.joined() == UNTITLED.text
    assert Passage("text", "  ").joined() == "text"
    assert passage_of(KEVIN.joined()) == KEVIN


def test_as_passage_reads_one_line_as_text_and_a_line_break_the_old_way() -> None:
    assert not deprecations(lambda: as_passage("Kevin Drew was born in Toronto."))
    assert as_passage("Kevin Drew was born in Toronto.") == Passage("Kevin Drew was born in Toronto.")
    assert as_passage(UNTITLED) is UNTITLED
    with pytest.warns(DeprecationWarning, match="title"):
        assert as_passage(KEVIN.joined()) == KEVIN
    assert not deprecations(lambda: as_passage(KEVIN.joined()))  # once
    with pytest.raises(TypeError):
        as_passage(None)  # type: ignore[arg-type]


# -- read_pairs: new-style and old-style readers ------------------------------------------------


class OldReader:
    """A reader written for the old interface: ``read(query, passage: str)``."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def read(self, query: str, passage: str) -> ReaderOutput:
        assert isinstance(passage, str)
        self.seen.append(passage)
        return ReaderOutput("Toronto" if "born" in query else "", 4.0)


class OldBatchReader(OldReader):
    """An old-style reader with ``read_batch`` and ``aread_batch``."""

    def __init__(self) -> None:
        super().__init__()
        self.batches = 0
        self.async_batches = 0

    def read_batch(self, pairs: Sequence[tuple[str, str]]) -> list[ReaderOutput]:
        self.batches += 1
        return [self.read(q, p) for q, p in pairs]

    async def aread_batch(self, pairs: Sequence[tuple[str, str]]) -> list[ReaderOutput]:
        self.async_batches += 1
        return [self.read(q, p) for q, p in pairs]


def test_new_style_reader_gets_passages_and_a_title_less_passage_whole() -> None:
    reader = ScriptedReader({})
    assert reads_passages(reader) and not reads_passages(OldReader())
    doc = Document(page_content=UNTITLED.text, metadata={"id": "u"})
    assert not deprecations(lambda: read_pairs(reader, [("q1", KEVIN), ("q2", UNTITLED), ("q3", doc)]))  # type: ignore[list-item]
    assert reader.batches == [[("q1", KEVIN), ("q2", UNTITLED), ("q3", UNTITLED)]]
    assert reader.batches[0][1][1].title == ""  # the first line stays text


def test_old_style_reader_gets_title_newline_text_and_warns_once() -> None:
    reader = OldReader()
    with pytest.warns(DeprecationWarning, match="OldReader reads passages as 'title\\\\ntext'"):
        outs = read_pairs(reader, [("Where was he born?", KEVIN), ("What?", UNTITLED)])
    assert outs == [ReaderOutput("Toronto", 4.0), ReaderOutput("", 4.0)]
    assert reader.seen == [f"Kevin Drew\n{KEVIN.text}", UNTITLED.text]
    # Once per class: neither a second call nor a second instance warns again.
    assert not deprecations(lambda: read_pairs(reader, [("q", KEVIN)]))
    assert not deprecations(lambda: read_pairs(OldReader(), [("q", KEVIN)]))
    # A caller's old string reaches an old-style reader unchanged.
    read_pairs(reader, [("q", " odd title \ntext")])  # type: ignore[list-item]
    assert reader.seen[-1] == " odd title \ntext"
    # Another old-style class warns for itself.
    with pytest.warns(DeprecationWarning, match="OldBatchReader"):
        read_pairs(OldBatchReader(), [("q", KEVIN)])


def test_a_callers_old_strings_still_reach_a_new_style_reader() -> None:
    reader = ScriptedReader({})
    with pytest.warns(DeprecationWarning, match="line break"):
        read_pairs(reader, [("q", KEVIN.joined()), ("q", "one line")])  # type: ignore[list-item]
    assert reader.batches == [[("q", KEVIN), ("q", Passage("one line"))]]


async def test_async_paths() -> None:
    batch = OldBatchReader()
    with pytest.warns(DeprecationWarning, match="OldBatchReader"):
        outs = await aread_pairs(batch, [("Where was he born?", KEVIN), ("q", UNTITLED)])
    assert outs[0] == ReaderOutput("Toronto", 4.0)
    assert batch.async_batches == 1 and batch.batches == 0
    assert batch.seen == [KEVIN.joined(), UNTITLED.text]
    # Without aread_batch: read in a worker thread; the warning comes from the calling one.
    single = OldReader()
    with pytest.warns(DeprecationWarning, match="OldReader"):
        await aread_pairs(single, [("q", KEVIN)])
    assert single.seen == [KEVIN.joined()]
    reader = ScriptedReader({"born": ReaderOutput("Toronto", 3.0)})
    assert await aread_pairs(reader, [("Where was he born?", UNTITLED)]) == [ReaderOutput("Toronto", 3.0)]
    assert reader.batches == [[("Where was he born?", UNTITLED)]]


# -- in the graph ---------------------------------------------------------------------------------


class FixedRetriever(BaseRetriever):
    """Returns the same documents for every query."""

    docs: list[Document]

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return list(self.docs)


def chain_llm() -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        return tracing_reply(messages) or CHAIN_FIXED

    return RuleChatModel(respond=respond)


def test_old_style_reader_in_the_graph() -> None:
    reader = OldBatchReader()
    with pytest.warns(DeprecationWarning, match="OldBatchReader"):
        out = create_searchain_graph(chain_llm(), retriever(), reader).invoke({"question": QUESTION})
    assert out["answer"] and reader.batches == 1
    # The top-1 passages, as the old interface gave them: "title\ntext".
    assert f"Spirit If...\n{PASSAGES[0].page_content}" in reader.seen
    assert f"Kevin Drew\n{PASSAGES[1].page_content}" in reader.seen


async def test_old_style_reader_in_the_async_graph() -> None:
    reader = OldReader()  # no read_batch: one read per pair, in a worker thread
    with pytest.warns(DeprecationWarning, match="OldReader"):
        out = await create_searchain_graph(chain_llm(), retriever(), reader).ainvoke({"question": QUESTION})
    assert out["answer"] and len(reader.seen) == 3
    assert f"Kevin Drew\n{PASSAGES[1].page_content}" in reader.seen


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_title_less_passage_in_the_graph_is_read_whole(mode: str) -> None:
    docs = [Document(page_content=UNTITLED.text, metadata={"id": "u1"})]
    reader = ScriptedReader({"born": ReaderOutput("Toronto", 3.0)})
    graph = create_searchain_graph(chain_llm(), FixedRetriever(docs=docs), reader, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": mode}}
    if mode == "sync":
        out = graph.invoke({"question": QUESTION}, config)
    else:
        out = await graph.ainvoke({"question": QUESTION}, config)
    assert out["answer"]
    assert [p for batch in reader.batches for _, p in batch] == [UNTITLED] * 3
    # The state keeps plain dicts (msgpack-serialisable), never Passage objects.
    state = graph.get_state(config).values
    assert JsonPlusSerializer().dumps_typed(state)[0] == "msgpack"
    assert state["references"][0]["document"] == {"page_content": UNTITLED.text, "metadata": {"id": "u1"}}


def test_baseline_reads_passages_from_the_documents() -> None:
    from searchain_graph.baselines import create_self_ask_graph

    def respond(messages: Sequence[BaseMessage]) -> str:
        if any(m.type == "ai" for m in messages):
            return "So the final answer is: Toronto"
        return "Yes.\nFollow up: Where was Kevin Drew born?\nIntermediate answer: made up"

    reader = OldReader()
    with pytest.warns(DeprecationWarning, match="OldReader"):
        create_self_ask_graph(RuleChatModel(respond=respond), retriever(), reader, max_steps=1).invoke(
            {"question": QUESTION}
        )
    assert reader.seen == [f"Kevin Drew\n{PASSAGES[1].page_content}"]


# -- the shipped readers ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dpr(tmp_path_factory: pytest.TempPathFactory) -> DPRReader:
    path = build_tiny_dpr(tmp_path_factory.mktemp("tiny-dpr-protocol"), VOCAB)
    return DPRReader(path, max_length=MAX_LENGTH, stride=STRIDE, max_query_tokens=MAX_QUERY).load()


def dpr_layout(reader: DPRReader, query: str, title: str, text: str) -> list[int]:
    """What transformers' own DPR tokenizer gives for ``[CLS] question [SEP] title [SEP] text``."""
    from transformers import DPRReaderTokenizerFast

    tokenizer = DPRReaderTokenizerFast.from_pretrained(reader.model_name)
    ids = tokenizer(questions=query, titles=title, texts=text)["input_ids"]
    return list(ids[0] if isinstance(ids[0], list) else ids)


def test_dpr_window_with_a_title(dpr: DPRReader) -> None:
    query = "Where was he born?"
    [window] = dpr._windows(query, KEVIN)
    assert window.input_ids == dpr_layout(dpr, query, KEVIN.title, KEVIN.text)
    tokens = dpr._tokenizer.convert_ids_to_tokens(window.input_ids)
    first, last = window.context
    assert tokens[first - 4 : first] == ["[SEP]", "kevin", "drew", "[SEP]"]  # the title segment
    assert [KEVIN.text[a:b].lower() for a, b in window.char_offsets][:2] == ["kevin", "drew"]
    assert last == len(window.input_ids)  # no [SEP] after the text, as in DPR


def test_dpr_window_without_a_title(dpr: DPRReader) -> None:
    query = "Where was he born?"
    [window] = dpr._windows(query, UNTITLED)
    assert window.input_ids == dpr_layout(dpr, query, "", UNTITLED.text)
    tokens = dpr._tokenizer.convert_ids_to_tokens(window.input_ids)
    first, _ = window.context
    assert tokens[first - 2 : first] == ["[SEP]", "[SEP]"]  # an empty title segment
    # The whole text is read, its first line included: nothing is taken for a title.
    words = [UNTITLED.text[a:b].lower() for a, b in window.char_offsets]
    assert words[:3] == ["kevin", "drew", "was"] and "toronto" in words
    out = dpr.read(query, UNTITLED)
    assert out.answer and out.answer in UNTITLED.text


def test_dpr_reads_strings_the_compatible_way(dpr: DPRReader) -> None:
    query = "Where was he born?"
    one_line = "Kevin Drew was born in Toronto."
    assert not deprecations(lambda: dpr.read(query, one_line))
    assert_reads_close(dpr.read(query, one_line), dpr.read(query, Passage(one_line)))
    with pytest.warns(DeprecationWarning, match="line break"):
        old = dpr.read(query, KEVIN.joined())
    assert_reads_close(old, dpr.read(query, KEVIN))
    assert_reads_close(
        dpr.read_batch([(query, KEVIN), (query, UNTITLED)]), [dpr.read(query, KEVIN), dpr.read(query, UNTITLED)]
    )


async def test_dpr_async_reads_passages(dpr: DPRReader) -> None:
    pairs = [("Where was he born?", KEVIN), ("Who?", UNTITLED)]
    assert_reads_close(await dpr.aread_batch(pairs), dpr.read_batch(pairs))
    assert_reads_close(await aread_pairs(dpr, pairs), read_pairs(dpr, pairs))
    assert_reads_close(await dpr.aread(*pairs[1]), dpr.read(*pairs[1]))


def test_extractive_and_llm_readers_read_the_title_when_there_is_one() -> None:
    assert ExtractiveQAReader._source(KEVIN) == f"Kevin Drew\n{KEVIN.text}"
    assert ExtractiveQAReader._source(UNTITLED) == UNTITLED.text
    assert DPRReader._source(KEVIN) == KEVIN.text
    llm = RuleChatModel(respond=lambda messages: "Toronto")
    reader = LLMReader(llm)
    assert reader.read("Where was Kevin Drew born?", KEVIN).answer == "Toronto"
    assert f"Passage: Kevin Drew {KEVIN.text}" in llm.calls[-1][0].text
    assert reader.read_batch([("Where was he born?", UNTITLED)])[0].answer == "Toronto"
    assert f"Passage: {' '.join(UNTITLED.text.split())}\n" in llm.calls[-1][0].text
