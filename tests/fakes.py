"""Fakes for unit tests: a rule-based chat model and a scripted reader.

The real counterparts (TransformersChatModel/SmolLM2, BM25Retriever, LLMReader) run in
``tests/integration_tests`` and in ``examples/``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import BaseCallbackHandler, CallbackManagerForLLMRun
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tracers.langchain import LangChainTracer
from langsmith import Client
from pydantic import Field

from searchain_graph import BM25Retriever, ReaderOutput
from searchain_graph.ir.readers.base import Passage

QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"

PASSAGES = [
    Document(
        page_content="Spirit If... is the debut solo album by Kevin Drew, released in 2007.",
        metadata={"id": "p1", "title": "Spirit If..."},
    ),
    Document(
        page_content="Kevin Drew (born 9 September 1976 in Toronto) is a Canadian musician.",
        metadata={"id": "p2", "title": "Kevin Drew"},
    ),
    Document(
        page_content="The Toronto Coach Terminal was the central bus station; Greyhound buses left from it.",
        metadata={"id": "p3", "title": "Toronto Coach Terminal"},
    ),
    Document(
        page_content="Montreal is the largest city in the province of Quebec.",
        metadata={"id": "p4", "title": "Montreal"},
    ),
]


def write_hotpot_file(path: Path, qid: str) -> Path:
    """A one-question HotpotQA (IRCoT layout) file over :data:`PASSAGES`, answered "Toronto Coach Terminal"."""
    row = {
        "question_id": qid,
        "question_text": QUESTION,
        "answers_objects": [{"spans": ["Toronto Coach Terminal"]}],
        "contexts": [{"title": d.metadata["title"], "paragraph_text": d.page_content} for d in PASSAGES],
    }
    path.write_text(json.dumps(row) + "\n")
    return path


def retriever() -> BM25Retriever:
    """The real BM25 retriever over four passages (fast, offline)."""
    return BM25Retriever.from_documents(PASSAGES, k=1)


Responder = Callable[[list[BaseMessage]], str]


class RuleChatModel(BaseChatModel):
    """A chat model that answers by what the conversation contains.

    ``respond`` sees the whole message list and returns the reply text. Every call is
    recorded in ``calls``.
    """

    respond: Any
    calls: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "rule-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        text = self.respond(messages)
        words = sum(len(m.text.split()) for m in messages)
        message = AIMessage(
            content=text,
            usage_metadata={"input_tokens": words, "output_tokens": len(text.split()), "total_tokens": 0},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])


def is_tracing(messages: Sequence[BaseMessage]) -> bool:
    """The tracing prompt opens with the paper's tracing sentence, or the tracing reader's; the CoQ prompt does not."""
    return messages[-1].text.startswith(
        ("You can try to generate the final answer for the [Question]", "Answer the question using the paragraphs")
    )


def last_user(messages: Sequence[BaseMessage]) -> str:
    return messages[-1].text


CHAIN_WRONG = """[Query 1]: Who is the performer of Spirit If...?
[Answer 1]: Kevin Drew.
[Query 2]: Where was Kevin Drew born?
[Answer 2]: Montreal.
[Query 3]: Where do greyhound buses in Montreal leave from?
[Answer 3]: Gare d'autocars de Montreal.
[Final Content]: Kevin Drew [1] was born in Montreal [2]. So the final answer is Gare d'autocars de Montreal."""

CHAIN_FIXED = """[Query 1]: Who is the performer of Spirit If...?
[Answer 1]: Kevin Drew.
[Query 2]: Where was Kevin Drew born?
[Answer 2]: Toronto.
[Query 3]: Where do greyhound buses in Toronto leave from?
[Answer 3]: Toronto Coach Terminal.
[Final Content]: The performer is Kevin Drew [1]. He was born in Toronto [2]. Buses leave from Toronto Coach \
Terminal [3]. So the final answer is Toronto Coach Terminal."""

TRACED = """[Final Content]: The performer of Spirit If... is Kevin Drew [1]. Kevin Drew was born in {city} [2]. \
Greyhound buses in {city} leave from {terminal} [3]. So the final answer is {terminal}."""


def tracing_reply(messages: Sequence[BaseMessage]) -> str | None:
    """Answer a tracing prompt from its own [Answer n] lines, citing [1..n].

    The tracing reader's prompt (``tracing="reader_confirmed"``, the default) is answered with its
    last checked answer, or nothing when it lists none.
    """
    text = last_user(messages)
    if not is_tracing(messages):
        return None
    if text.startswith("Answer the question"):
        checked = text.rsplit("Checked answers:\n", 1)[1].split("\n\n", 1)[0] if "Checked answers:\n" in text else ""
        last = checked.splitlines()[-1].rsplit("? ", 1)[-1] if text.count("Checked answers:") > 1 else ""
        return f"A: {last}"
    tail = text.rsplit('[Question]: "', 1)[1]
    answers = [line.split("]: ", 1)[1] for line in tail.splitlines() if line.startswith("[Answer ")]
    parts = [f"{a.rstrip('.')} [{i}]." for i, a in enumerate(answers, start=1)]
    final = answers[-1].rstrip(".") if answers else "unknown"
    return "[Final Content]: " + " ".join(parts) + f" So the final answer is {final}."


class ScriptedReader:
    """A reader that answers by keyword in the query, with a fixed confidence per keyword.

    Records every ``read_batch`` call in ``batches`` and every ``read`` in ``singles``. It
    takes :class:`Passage` (the reader interface's new style).
    """

    reads_passages: ClassVar[bool] = True

    def __init__(self, table: dict[str, ReaderOutput], *, batch: bool = True) -> None:
        self.table = table
        self.batches: list[list[tuple[str, Passage]]] = []
        self.singles: list[tuple[str, Passage]] = []
        if not batch:
            self.read_batch = None  # type: ignore[assignment]

    def _lookup(self, query: str) -> ReaderOutput:
        for key, out in self.table.items():
            if key.lower() in query.lower():
                return out
        return ReaderOutput("", -5.0)

    def read(self, query: str, passage: Passage) -> ReaderOutput:
        assert isinstance(passage, Passage)
        self.singles.append((query, passage))
        return self._lookup(query)

    def read_batch(self, pairs: Sequence[tuple[str, Passage]]) -> list[ReaderOutput]:  # type: ignore[no-redef]
        assert all(isinstance(p, Passage) for _, p in pairs)
        self.batches.append(list(pairs))
        return [self._lookup(q) for q, _ in pairs]


class RunCollector(BaseCallbackHandler):
    """Collects (name, metadata) of every run start, as LangSmith's tracer would see them."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def on_chain_start(self, serialized: Any, inputs: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        self.runs.append((kwargs.get("name") or "", dict(metadata or {})))

    def on_chat_model_start(self, serialized: Any, messages: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        self.runs.append((kwargs.get("name") or "", dict(metadata or {})))

    def on_retriever_start(self, serialized: Any, query: Any, *, metadata: Any = None, **kwargs: Any) -> None:
        self.runs.append((kwargs.get("name") or "", dict(metadata or {})))


class RecordingLangSmithClient(Client):
    """A LangSmith client that records what LangChain's tracer would send, instead of sending it.

    ``recorded`` maps each run id to its fields, with the metadata and tags of its last PATCH (what a
    LangSmith server ends up storing).
    """

    def __init__(self) -> None:
        super().__init__(api_url="http://127.0.0.1:9", api_key="unused", auto_batch_tracing=False)
        self.recorded: dict[str, dict[str, Any]] = {}

    def create_run(self, name: str, inputs: dict[str, Any], run_type: str, **kwargs: Any) -> None:  # type: ignore[override]
        self.recorded[str(kwargs["id"])] = {
            "id": str(kwargs["id"]),
            "name": name,
            "parent": str(kwargs.get("parent_run_id") or ""),
            "metadata": dict((kwargs.get("extra") or {}).get("metadata") or {}),
            "tags": list(kwargs.get("tags") or []),
        }

    def update_run(self, run_id: Any, **kwargs: Any) -> None:  # type: ignore[override]
        run = self.recorded[str(run_id)]
        run["metadata"] = dict((kwargs.get("extra") or {}).get("metadata") or run["metadata"])
        run["tags"] = list(kwargs.get("tags") or run["tags"])

    def children(self, run_id: str) -> list[dict[str, Any]]:
        return [r for r in self.recorded.values() if r["parent"] == run_id]


def langsmith_tracer() -> tuple[LangChainTracer, RecordingLangSmithClient]:
    client = RecordingLangSmithClient()
    return LangChainTracer(client=client, project_name="searchain-tests"), client


CHAIN_UNSOLVED = """[Query 1]: Where was Kevin Drew born?
[Answer 1]: Toronto.
[Unsolved Query]: Where do greyhound buses in Toronto leave from?
[Final Content]: Kevin Drew was born in Toronto [1]."""

TREE_READS = {
    "performer": ReaderOutput("Kevin Drew", 4.0),
    "born": ReaderOutput("Toronto", 3.0),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 2.5),
}
"""What :class:`ScriptedReader` reads for :func:`tree_llm`'s chains."""


def tree_llm() -> RuleChatModel:
    """An LLM whose run grows a tree of three branches: a correction, then a completion.

    Round 1 writes :data:`CHAIN_WRONG` (IR corrects node 2, Montreal → Toronto); round 2 restarts
    from the corrected node and leaves the last hop unsolved (IR completes it); round 3 writes
    :data:`CHAIN_FIXED`, whose queries are all duplicates. Tracing cites the path.
    """

    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        last = last_user(messages)
        if "should be Toronto Coach Terminal" in last:
            return CHAIN_FIXED
        if "should be Toronto" in last:
            return CHAIN_UNSOLVED
        return CHAIN_WRONG

    return RuleChatModel(respond=respond)


_SHOULD_BE = re.compile(r"the answer for .+? should be (.+?), you can give your answer")


def serve_llm(second: str = CHAIN_UNSOLVED) -> RuleChatModel:
    """A rule-based LLM for the real stack (BM25 over the demo corpus, the bundled reader).

    Round 1 writes :data:`CHAIN_WRONG`: the bundled reader corrects node 2 (Montreal → Toronto,
    f ≈ 6.2 > θ 4.36 with the weights at step 8,112). Round 2 (``second``) restarts from Toronto
    and leaves the last hop unsolved: IR completes it with whatever the reader finds. Round 3 takes
    that answer, and all its queries are duplicates. Tracing cites the path. ``searchain serve --model
    import:tests.fakes:serve_llm`` loads it (with the repository's root on ``PYTHONPATH``).
    Under the shipped preset, whose ``close_early`` ends the run when IR completes the chain's last
    node, this takes two rounds; :func:`three_round_llm` takes three.
    """

    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        last = last_user(messages)
        completed = _SHOULD_BE.search(last)
        if completed:
            return CHAIN_FIXED.replace("Toronto Coach Terminal", completed.group(1).rstrip("."))
        if "should be Toronto" in last:
            return second
        return CHAIN_WRONG

    return RuleChatModel(respond=respond)


CHAIN_UNSOLVED_MIDDLE = """[Query 1]: Where was Kevin Drew born?
[Answer 1]: Toronto.
[Unsolved Query]: Where do greyhound buses in Toronto leave from?
[Query 3]: Which city is that bus terminal in?
[Answer 3]: Toronto.
[Final Content]: Kevin Drew was born in Toronto [1]."""


def three_round_llm() -> RuleChatModel:
    """:func:`serve_llm` whose round-2 chain leaves a middle hop unsolved, so that every preset takes three rounds.

    IR's completion of a node that is not the chain's last starts round 3 under ``close_early`` too.
    ``--model import:tests.fakes:three_round_llm`` (or ``SEARCHAIN_MODEL``) loads it.
    """
    return serve_llm(CHAIN_UNSOLVED_MIDDLE)


def _paced(seconds: float) -> RuleChatModel:
    """:func:`serve_llm`, each call taking ``seconds`` first."""
    fast = serve_llm().respond

    def respond(messages: Sequence[BaseMessage]) -> str:
        time.sleep(seconds)
        reply: str = fast(messages)
        return reply

    return RuleChatModel(respond=respond)


def slow_serve_llm() -> RuleChatModel:
    """:func:`serve_llm` taking 30 ms per call, so that an evaluation lasts long enough to be killed mid-way.

    ``searchain eval --model import:tests.fakes:slow_serve_llm`` loads it.
    """
    return _paced(0.03)


def paced_serve_llm() -> RuleChatModel:
    """:func:`serve_llm` taking 0.4 s per call: a run lasts seconds, long enough to kill its server mid-way.

    ``searchain serve --model import:tests.fakes:paced_serve_llm`` loads it.
    """
    return _paced(0.4)


def broken_llm() -> RuleChatModel:
    """An LLM whose every call fails (``--model import:tests.fakes:broken_llm``)."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        raise ValueError("this LLM always fails")

    return RuleChatModel(respond=respond)


def stalled_llm() -> RuleChatModel:
    """:func:`serve_llm` taking 60 s per call: a reply long enough to press Ctrl-C in (``searchain ask``)."""
    return _paced(60.0)
