"""How a baseline graph's nodes run: one node body serves ``invoke`` and ``ainvoke``.

A node body is a generator that yields requests (:class:`_Generate` for the LLM,
:class:`_Retrieve` for the retriever, :class:`_Read` for the reader) and receives their
results; :class:`_Methods` binds one LLM, retriever and reader, performs the requests
synchronously or asynchronously, counts their usage and traces each call under its run name
with ``searchain_step``, ``searchain_round`` and ``searchain_method`` metadata, as SearChain
(Xu et al., 2024) does. Also here: the start and finish of a run, the one-shot node of the
single-prompt methods (CoT, direct, Direct Retrieval's answer) and the graph builder.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, cast

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.runnables.config import run_in_executor
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from searchain_graph.evaluation.baselines.common import MethodOutput, MethodState, final_answer
from searchain_graph.ir.readers.base import Reader, aread_pairs, passage_of, read_pairs
from searchain_graph.method.calls import count_usage, doc_dict, empty_usage, message_text, trace_config
from searchain_graph.method.context import normalize_task
from searchain_graph.method.graph import Step
from searchain_graph.method.question import task_question, validate_question
from searchain_graph.method.state import DocumentDict, InputState, Usage


def _config(step: str, rnd: int, method: str, **extra: Any) -> RunnableConfig:
    # The calls keep their own run names (the model's, the retriever's, "read"): the graph node they
    # run in already bears the step's name, and a trace should not show it twice.
    return trace_config(step, rnd, named=False, searchain_method=method, **extra)


def _accepts_k(method: Callable[..., Any]) -> bool:
    params = inspect.signature(method).parameters
    return "k" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _takes_k(retriever: BaseRetriever) -> tuple[bool, bool]:
    """Whether ``invoke(query, k=n)`` and ``ainvoke(query, k=n)`` reach a method that takes ``k``.

    ``BaseRetriever``'s default ``_aget_relevant_documents`` takes no extra arguments, so a
    retriever that only implements the sync method is run in an executor for ``ainvoke``.
    """
    if not getattr(retriever, "_expects_other_args", False):
        return False, False
    cls = type(retriever)
    return _accepts_k(cls._get_relevant_documents), _accepts_k(cls._aget_relevant_documents)


# -- requests a node makes; one driver performs them synchronously, one asynchronously -----------


@dataclass(frozen=True)
class _Generate:
    messages: list[BaseMessage]
    step: str
    round: int
    stop: list[str] | None = None
    options: tuple[tuple[str, Any], ...] = ()
    """Call options (``temperature``, ``seed``) for sampled paths."""


@dataclass(frozen=True)
class _Retrieve:
    query: str
    k: int
    round: int


@dataclass(frozen=True)
class _Read:
    pairs: list[tuple[str, DocumentDict]]  # (query, retrieved document); the reader gets its Passage
    round: int


_Request = _Generate | _Retrieve | _Read
_Node = Generator[_Request, Any, dict[str, Any]]


class _Methods:
    """Node functions shared by the baselines, bound to one LLM, retriever and reader.

    A node is a generator that yields :class:`_Generate`/:class:`_Retrieve`/:class:`_Read`
    requests and receives their results, so that one body serves ``invoke`` and ``ainvoke``.
    """

    def __init__(
        self,
        method: str,
        llm: BaseChatModel,
        *,
        task: str,
        max_question_chars: int,
        retriever: BaseRetriever | None = None,
        reader: Reader | None = None,
    ) -> None:
        if not isinstance(llm, BaseChatModel):
            raise TypeError(f"llm must be a LangChain BaseChatModel, got {type(llm).__name__}")
        if retriever is not None and not isinstance(retriever, BaseRetriever):
            raise TypeError(f"retriever must be a LangChain BaseRetriever, got {type(retriever).__name__}")
        if reader is not None and not callable(getattr(reader, "read", None)):
            raise TypeError(f"reader must have a read(query, passage) method, got {type(reader).__name__}")
        if not isinstance(max_question_chars, int) or max_question_chars < 1:
            raise ValueError(f"max_question_chars must be >= 1, got {max_question_chars!r}")
        self.method = method
        self.llm = llm
        self.task = normalize_task(task)
        self.max_question_chars = max_question_chars
        self.retriever = retriever
        self.reader = reader
        self.takes_k, self.atakes_k = _takes_k(retriever) if retriever is not None else (False, False)
        self.read = RunnableLambda(self._read_sync, afunc=self._read_async, name="read")

    # -- performing requests --------------------------------------------------------------------
    def _read_sync(self, pairs: list[tuple[str, DocumentDict]]) -> list[tuple[str, float | None]]:
        assert self.reader is not None
        passages = [(q, passage_of(d)) for q, d in pairs]
        return [(o.answer, o.confidence) for o in read_pairs(self.reader, passages)]

    async def _read_async(self, pairs: list[tuple[str, DocumentDict]]) -> list[tuple[str, float | None]]:
        assert self.reader is not None
        passages = [(q, passage_of(d)) for q, d in pairs]
        return [(o.answer, o.confidence) for o in await aread_pairs(self.reader, passages)]

    def _retrieve_args(self, req: _Retrieve) -> tuple[RunnableConfig, dict[str, Any]]:
        config = _config("retrieve", req.round, self.method, searchain_query=req.query)
        return config, ({"k": req.k} if self.takes_k else {})

    def _perform(self, req: _Request) -> Any:
        if isinstance(req, _Generate):
            config = _config(req.step, req.round, self.method)
            return self.llm.invoke(req.messages, config=config, stop=req.stop, **dict(req.options))
        if isinstance(req, _Retrieve):
            assert self.retriever is not None
            config, kwargs = self._retrieve_args(req)
            return list(self.retriever.invoke(req.query, config=config, **kwargs))[: req.k]
        return self.read.invoke(req.pairs, config=_config("read", req.round, self.method))

    async def _aperform(self, req: _Request) -> Any:
        if isinstance(req, _Generate):
            config = _config(req.step, req.round, self.method)
            return await self.llm.ainvoke(req.messages, config=config, stop=req.stop, **dict(req.options))
        if isinstance(req, _Retrieve):
            assert self.retriever is not None
            config, kwargs = self._retrieve_args(req)
            if kwargs and not self.atakes_k:  # the sync method takes k, the default async one does not
                invoke = functools.partial(self.retriever.invoke, req.query, config, **kwargs)
                return list(await run_in_executor(config, invoke))[: req.k]
            return list(await self.retriever.ainvoke(req.query, config=config, **kwargs))[: req.k]
        return await self.read.ainvoke(req.pairs, config=_config("read", req.round, self.method))

    def node(self, body: Callable[[MethodState], _Node], name: str) -> Step:
        """A generator node body as a graph node with a sync and an async driver (one run per node)."""

        def run(state: MethodState, runtime: Any) -> dict[str, Any]:
            gen, result = body(state), None
            try:
                while True:
                    result = self._perform(gen.send(result))
            except StopIteration as stop:
                return cast(dict[str, Any], stop.value)

        async def arun(state: MethodState, runtime: Any) -> dict[str, Any]:
            gen, result = body(state), None
            try:
                while True:
                    result = await self._aperform(gen.send(result))
            except StopIteration as stop:
                return cast(dict[str, Any], stop.value)

        return Step(name, run, arun)

    # -- request helpers (used with ``yield from``) ----------------------------------------------
    @staticmethod
    def generate(
        usage: Usage,
        prompt: str | list[BaseMessage],
        step: str,
        rnd: int,
        stop: list[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> Generator[_Request, Any, tuple[str, Usage]]:
        """Ask the LLM (``options``: call options such as ``temperature``); return its text and the usage."""
        sent: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else prompt
        reply = yield _Generate(sent, step, rnd, stop, tuple(sorted((options or {}).items())))
        return message_text(reply), count_usage(usage, sent, reply)

    @staticmethod
    def retrieve(
        usage: Usage, query: str, k: int, rnd: int
    ) -> Generator[_Request, Any, tuple[list[DocumentDict], Usage]]:
        """Retrieve the top ``k``; return them as dicts and the usage counted with the call."""
        docs: list[Document] = yield _Retrieve(query, k, rnd)
        return [doc_dict(d) for d in docs], {**usage, "retrieval_calls": usage["retrieval_calls"] + 1}

    # -- run start ---------------------------------------------------------------------------------
    def start(self, state: MethodState, **extra: Any) -> dict[str, Any]:
        """A fresh run: the validated question and zeroed outputs."""
        question = validate_question(state.get("question"), self.max_question_chars)
        return {
            "question": question,
            "answer": "",
            "final_content": "",
            "rounds": 0,
            "usage": empty_usage(),
            "passages": [],
            "warnings": [],
            "pending": True,
            **extra,
        }

    def question(self, question: str) -> str:
        return task_question(question, self.task)

    def sampling(self, temperature: float, index: int) -> dict[str, Any]:
        """Call options of sampled path ``index``: the temperature, and a seed where the model takes one."""
        options: dict[str, Any] = {"temperature": temperature}
        if "seed" in getattr(type(self.llm), "model_fields", {}) or getattr(self.llm, "_llm_type", "") == (
            "transformers-chat"
        ):
            options["seed"] = index
        return options

    def finish(self, update: dict[str, Any], content: str, warnings: list[str], **extra: Any) -> dict[str, Any]:
        """The run's last update: ``final_content`` and the task-aware ``answer``."""
        content = content.strip()
        answer = final_answer(content, self.task)
        if not answer:
            warnings = warnings + ["the LLM stated no answer"]
        return {
            **update,
            "final_content": content,
            "answer": answer,
            "warnings": warnings,
            "pending": False,
            **extra,
        }


# -- the one-shot node (CoT, direct, Direct Retrieval's answer) and the graph builder --------------


def _one_shot(
    methods: _Methods, step: str, render: Callable[[MethodState, str], str]
) -> Callable[[MethodState], _Node]:
    """A node that writes one prompt (from the state after :meth:`_Methods.start`) and finishes."""

    def body(state: MethodState) -> _Node:
        # The entry node starts a run; Direct Retrieval's answer node continues the retrieve node's.
        update = methods.start(state) if not state.get("pending") else {}
        current = cast(MethodState, {**state, **update})
        usage: Usage = current["usage"]
        text, usage = yield from methods.generate(
            usage, render(current, methods.question(current["question"])), step, 1
        )
        warnings = list(current["warnings"])
        if not text.strip():
            warnings.append("the LLM returned empty output")
        return methods.finish({**update, "usage": usage, "rounds": 1}, text, warnings)

    return body


def _one_node(
    methods: _Methods,
    step: str,
    body: Callable[[MethodState], _Node],
    retry_policy: RetryPolicy | None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None,
    name: str,
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """A graph of one node, ``step``, that runs ``body`` (CoT, direct, CoT-SC, Recite, w/o-IR methods)."""
    builder = _builder()
    builder.add_node(step, methods.node(body, step), retry_policy=retry_policy)
    builder.add_edge(START, step)
    builder.add_edge(step, END)
    return _compile(builder, checkpointer, name)


def _compile(
    builder: StateGraph[MethodState, None, InputState, MethodOutput],
    checkpointer: BaseCheckpointSaver[Any] | bool | None,
    name: str,
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    return builder.compile(checkpointer=checkpointer, name=name)


def _builder() -> StateGraph[MethodState, None, InputState, MethodOutput]:
    return StateGraph(MethodState, input_schema=InputState, output_schema=MethodOutput)
