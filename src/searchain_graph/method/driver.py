"""The driver of the step protocol: runs the steps of one method on one LLM, retriever and reader.

:class:`StepDriver` turns a step (:mod:`searchain_graph.method.steps`: a generator that yields
:class:`~searchain_graph.method.steps.Generate`, :class:`~searchain_graph.method.steps.Retrieve`
and :class:`~searchain_graph.method.steps.Read` requests and returns its update) into a graph
node. It performs each request synchronously or asynchronously, traces it under the step and the
round, counts its cost as a ``usage`` delta, writes the round number once per round, records the
step that ran last and starts a run afresh at the entry step. SearChain
(:mod:`searchain_graph.method.graph`) and every baseline
(:mod:`searchain_graph.baselines`) run on it; see the worked example in
:mod:`searchain_graph.method.steps`.
"""

from __future__ import annotations

import asyncio
import copy
import functools
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import Runnable, RunnableConfig, RunnableLambda, RunnableWithFallbacks
from langchain_core.runnables.base import RunnableBindingBase
from langchain_core.runnables.config import run_in_executor
from langchain_core.runnables.configurable import DynamicRunnable
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from searchain_graph._text import bound_text, replace_surrogates
from searchain_graph.ir.readers.base import Reader, ReaderOutput, aread_pairs, passage_of, read_pairs
from searchain_graph.ir.retriever_calls import takes_k
from searchain_graph.method.calls import call_usage, doc_dict, label_node_run, message_text, trace_config
from searchain_graph.method.ir_tasks import CachedIR, IRCall
from searchain_graph.method.limits import MAX_ANSWER_CHARS, MAX_PASSAGE_CHARS, MAX_REPLY_CHARS
from searchain_graph.method.question import validate_question
from searchain_graph.method.state import DocumentDict, Usage, add_usage, empty_usage
from searchain_graph.method.steps import (
    Generate,
    Read,
    Reply,
    Request,
    Retrieve,
    Step,
    StepFunction,
    StepSettings,
    reducers_of,
)

__all__ = ["StepDriver"]

METADATA_WARNING = "passage metadata was not strict JSON"
"""The run's one warning when a retriever's metadata had to be converted (the fields follow it)."""


def innermost(runnable: Any) -> Any:
    """The runnable inside LangChain's wrappers.

    Through ``bind``, ``with_retry``, ``with_config``, ``with_fallbacks`` (its first runnable) and
    ``configurable_fields`` (its default).
    """
    seen = 0
    while seen < 32:
        seen += 1
        if isinstance(runnable, RunnableBindingBase):
            runnable = runnable.bound
        elif isinstance(runnable, RunnableWithFallbacks):
            runnable = runnable.runnable
        elif isinstance(runnable, DynamicRunnable):
            runnable = runnable.default
        else:
            break
    return runnable


def check_llm(llm: Any) -> None:
    """Refuse what cannot be the chat model: not a Runnable, or a retriever given in its place.

    A chat model and any Runnable over one (``llm.with_retry()``, ``llm.with_fallbacks([...])``,
    ``llm.bind(stop=...)``, ``init_chat_model(..., configurable_fields=...)``) are accepted.
    """
    if not isinstance(llm, Runnable) or isinstance(innermost(llm), BaseRetriever):
        raise TypeError(
            f"llm must be a LangChain chat model or a Runnable over one (with_retry, with_fallbacks, bind), "
            f"got {type(llm).__name__}"
        )


def check_retriever(retriever: Any) -> None:
    """Refuse what cannot be the retriever: not a Runnable, or a chat model given in its place.

    A retriever and any Runnable over one (``with_config``, ``with_retry``, ``with_fallbacks``)
    are accepted: it takes a query and returns documents.
    """
    if not isinstance(retriever, Runnable) or isinstance(innermost(retriever), BaseChatModel):
        raise TypeError(
            f"retriever must be a LangChain retriever or a Runnable over one (with_config, with_retry, "
            f"with_fallbacks), got {type(retriever).__name__}"
        )


def _advance(gen: Generator[Any, Any, Any], value: Any) -> tuple[bool, Any]:
    """Resume a step body: ``(False, its next request)``, or ``(True, what it returned)``."""
    try:
        return False, gen.send(value)
    except StopIteration as stop:  # only the body's own end: a call's StopIteration never gets here
        return True, stop.value


@dataclass
class _Running:
    """One step under way: its round, the state it sees, its settings and the cost so far."""

    name: str
    round: int
    state: dict[str, Any]
    settings: Any
    fresh: dict[str, Any] | None
    usage: Usage = field(default_factory=empty_usage)
    warnings: list[str] = field(default_factory=list)

    def clean(self, text: str, what: str, limit: int) -> str:
        """``text`` as it enters the run: lone surrogates replaced, cut to ``limit``; each said in a warning."""
        text, replaced = replace_surrogates(text)
        if replaced:
            self.warnings.append(f"round {self.round}: {what} held {replaced} lone surrogate(s), replaced by U+FFFD")
        text, cut = bound_text(text, limit)
        if cut:
            self.warnings.append(f"round {self.round}: {what} was cut to {limit:,} characters ({cut:,} dropped)")
        return text


class StepDriver:
    """Runs the steps of one method, bound to one LLM, retriever and reader.

    Args:
        method: The method's name, in every call's ``searchain_method`` metadata.
        llm: Any LangChain chat model.
        retriever: Any LangChain retriever (methods that retrieve).
        reader: A :class:`~searchain_graph.ir.readers.base.Reader` (methods that read).
        settings: ``runtime -> settings`` of a run (SearChain's come from the run's context), or
            the fixed settings of the method; they must have ``max_question_chars``.
        fresh: The values a new run starts with, by channel (the question, ``rounds`` and
            ``usage`` are the driver's); a channel with a reducer in ``state_schema`` is
            replaced, not reduced.
        state_schema: The graph's state ``TypedDict``, for its reducers (``usage`` is summed).
        title: How error notes name the method (default: ``method``).
        cache_ir: Retrieve and read through LangGraph tasks with a ``CachePolicy``
            (:mod:`searchain_graph.method.ir_tasks`): for a graph compiled with a ``cache``.
    """

    def __init__(
        self,
        method: str,
        llm: BaseChatModel,
        *,
        retriever: BaseRetriever | None = None,
        reader: Reader | None = None,
        settings: Callable[[Runtime[Any] | None], Any] | StepSettings,
        fresh: Mapping[str, Any] | None = None,
        state_schema: type | None = None,
        title: str | None = None,
        cache_ir: bool = False,
    ) -> None:
        check_llm(llm)
        if retriever is not None:
            check_retriever(retriever)
        if reader is not None and not callable(getattr(reader, "read", None)):
            raise TypeError(f"reader must have a read(query, passage) method, got {type(reader).__name__}")
        self.method = method
        self.title = title or method
        self.llm = llm
        self.retriever = retriever
        self.reader = reader
        self._settings = settings
        self.fresh = dict(fresh or {})
        self.reducers = reducers_of(state_schema) if state_schema is not None else {"usage": add_usage}
        plain = retriever if isinstance(retriever, BaseRetriever) else None  # a wrapper passes no k
        self.takes_k, self.atakes_k = takes_k(plain) if plain is not None else (False, False)
        self._read: RunnableLambda[list[tuple[str, DocumentDict]], list[ReaderOutput]] = RunnableLambda(
            self._read_pairs, afunc=self._aread_pairs, name="read"
        )
        self.cached = CachedIR(retriever, reader) if cache_ir else None

    def settings(self, runtime: Runtime[Any] | None) -> Any:
        """The settings of the run ``runtime`` belongs to."""
        return self._settings(runtime) if callable(self._settings) else self._settings

    # -- the node -----------------------------------------------------------------------------------
    def node(
        self,
        name: str,
        body: StepFunction,
        *,
        starts_run: bool = False,
        continues_after: Collection[str] = (),
        opens_round: bool = False,
    ) -> Step:
        """``body`` as a graph node, with a sync and an async driver and no run of its own.

        Args:
            name: The node's name (its calls' ``searchain_step``; error notes name it).
            body: The step.
            starts_run: The entry step: a new run starts here, unless the last step that ran is
                one of ``continues_after`` (the steps that lead back to it within a run).
            continues_after: See ``starts_run``.
            opens_round: The step opens a round: ``rounds`` goes up by one (to 1 for a new run).
        """

        def begin(state: Any, runtime: Runtime[Any] | None) -> _Running:
            state = dict(state or {})
            settings = self.settings(runtime)
            done = int(state.get("rounds") or 0)
            fresh = None
            replaced = 0
            if starts_run and state.get("last_step") not in continues_after:
                question = state.get("question")
                if isinstance(question, str):
                    question, replaced = replace_surrogates(question)
                question = validate_question(question, settings.max_question_chars)
                # A copy per run: no two runs share a list of the starting values.
                fresh = copy.deepcopy({"usage": empty_usage(), **self.fresh, "question": question, "rounds": 0})
                state.update(fresh)
                done = 0
            rnd = done + 1 if opens_round else max(done, 1)
            if opens_round:
                state["rounds"] = rnd
            label_node_run(name, rnd)
            running = _Running(name, rnd, state, settings, fresh)
            if replaced:
                running.warnings.append(f"the question held {replaced} lone surrogate(s), replaced by U+FFFD")
            return running

        def run(state: Any, runtime: Runtime[Any] | None) -> Any:
            running = None
            try:
                running = begin(state, runtime)
                gen, result = body(running.state, running.settings), None
                if not isinstance(gen, Generator):
                    return self._finish(running, gen, opens_round)
                while True:
                    try:  # only the body's own end is a StopIteration here, never a call's
                        request = gen.send(result)
                    except StopIteration as stop:
                        return self._finish(running, stop.value, opens_round)
                    result = self._perform(request, running)
            except Exception as exc:
                self._note(exc, name, running, state, opens_round)
                raise

        async def arun(state: Any, runtime: Runtime[Any] | None) -> Any:
            running = None
            try:
                running = begin(state, runtime)
                gen, result = body(running.state, running.settings), None
                if not isinstance(gen, Generator):
                    return self._finish(running, gen, opens_round)
                while True:
                    # The body's own work between its requests (parsing, IR's verdicts, the duplicate
                    # check by meaning, which loads and runs an encoder) runs off the event loop.
                    done, value = await run_in_executor(None, _advance, gen, result)
                    if done:
                        return self._finish(running, value, opens_round)
                    result = await self._aperform(value, running)
            except Exception as exc:
                self._note(exc, name, running, state, opens_round)
                raise

        return Step(name, run, arun)

    def _finish(self, running: _Running, returned: Any, opens_round: bool) -> Any:
        """The step's update: its own, its calls' usage, the round, the last step, a new run's reset."""
        if isinstance(returned, Command):
            return Command(
                graph=returned.graph,
                update=self._finish(running, returned.update, opens_round),
                resume=returned.resume,
                goto=returned.goto,
            )
        out = dict(returned or {})
        if running.warnings:
            # A channel with a reducer takes this step's warnings; a plain one the whole list.
            before = [] if "warnings" in self.reducers else list(running.state.get("warnings") or [])
            out["warnings"] = [*out.get("warnings", before), *running.warnings]
        if running.usage != empty_usage() or "usage" in out:
            out["usage"] = add_usage(out.get("usage"), running.usage)
        if opens_round:
            out["rounds"] = running.round
        out["last_step"] = running.name
        if running.fresh is not None:
            for key, value in running.fresh.items():
                reducer = self.reducers.get(key)
                if reducer is not None:
                    out[key] = Overwrite(reducer(value, out[key]) if key in out else value)
                else:
                    out.setdefault(key, value)
        return out

    def _note(self, exc: Exception, name: str, running: _Running | None, state: Any, opens_round: bool) -> None:
        """Say on the exception (a note, shown with its traceback) which step of which round failed."""
        if running is not None:
            rnd = running.round
        else:
            done = int(state.get("rounds") or 0) if isinstance(state, dict) else 0
            rnd = done + 1 if opens_round else max(done, 1)
        exc.add_note(f"{self.title} step {name!r} failed in round {rnd}: {type(exc).__name__}: {exc}")

    # -- performing requests ------------------------------------------------------------------------
    def _config(self, step: str, rnd: int | None, running: _Running, **extra: Any) -> RunnableConfig:
        # A call's run is named after its step, unless the node it runs in bears that name already
        # (a trace should not show it twice); LLM calls keep the model's own name.
        rnd = running.round if rnd is None else rnd
        return trace_config(step, rnd, named=step != running.name, searchain_method=self.method, **extra)

    def _generate_args(self, req: Generate, running: _Running) -> tuple[list[BaseMessage], dict[str, Any]]:
        rnd = running.round if req.round is None else req.round
        config = trace_config(req.step or running.name, rnd, named=False, searchain_method=self.method)
        return list(req.messages), {"config": config, "stop": list(req.stop) if req.stop else None, **dict(req.options)}

    def _count_generation(self, sent: list[BaseMessage], reply: BaseMessage, running: _Running) -> Reply:
        running.usage = add_usage(running.usage, call_usage(sent, reply))
        raw = message_text(reply)
        text = running.clean(raw, "the LLM's reply", MAX_REPLY_CHARS)
        meta = getattr(reply, "response_metadata", None) or {}
        return Reply(text, truncated=meta.get("finish_reason") == "length" or len(raw) > MAX_REPLY_CHARS)

    def _retrieve_args(self, req: Retrieve, running: _Running) -> tuple[list[RunnableConfig], dict[str, Any]]:
        if self.retriever is None:
            raise RuntimeError(f"{self.title} asked to retrieve, but it was built without a retriever")
        configs = [self._config(req.step, req.round, running, searchain_query=q) for q in req.queries]
        return configs, ({"k": req.k} if req.k is not None and self.takes_k else {})

    def _count_retrieval(
        self, req: Retrieve, found: Sequence[Sequence[Document]], running: _Running, notes: Sequence[str] = ()
    ) -> list[Any]:
        running.usage = add_usage(running.usage, {"retrieval_calls": len(req.queries)})
        notes = list(notes)  # what the passages' metadata had to lose to be strict JSON (doc_dict)
        out = []
        for docs in found:
            dicts = [doc_dict(d, notes) for d in (docs if req.k is None else list(docs)[: req.k])]
            for doc in dicts:
                doc["page_content"] = running.clean(doc["page_content"], "a retrieved passage", MAX_PASSAGE_CHARS)
                title = doc["metadata"].get("title")
                if isinstance(title, str):
                    doc["metadata"]["title"] = running.clean(title, "a passage title", MAX_PASSAGE_CHARS)
            out.append(dicts)
        said = [*(running.state.get("warnings") or []), *running.warnings]
        if notes and not any(METADATA_WARNING in w for w in said):  # one warning a run
            running.warnings.append(f"round {running.round}: {METADATA_WARNING}, converted: {', '.join(notes)}")
        return out

    @staticmethod
    def _clean_reads(outputs: Sequence[ReaderOutput], running: _Running) -> list[ReaderOutput]:
        clean = []
        for out in outputs:
            answer = out.answer if isinstance(out.answer, str) else ""
            clean.append(ReaderOutput(running.clean(answer, "the reader's answer", MAX_ANSWER_CHARS), out.confidence))
        return clean

    def _read_args(self, req: Read, running: _Running) -> RunnableConfig:
        if self.reader is None:
            raise RuntimeError(f"{self.title} asked to read, but it was built without a reader")
        running.usage = add_usage(running.usage, {"reader_calls": len(req.pairs)})
        return self._config(req.step, req.round, running)

    def _perform(self, req: Request, running: _Running) -> Any:
        if isinstance(req, Generate):
            sent, kwargs = self._generate_args(req, running)
            return self._count_generation(sent, self.llm.invoke(sent, **kwargs), running)
        if self.cached is not None:
            futures, job = self._start_cached(req, running)
            return self._count_cached(req, [f.result() for f in futures], job, running)
        if isinstance(req, Retrieve):
            configs, kwargs = self._retrieve_args(req, running)
            assert self.retriever is not None
            if len(req.queries) == 1:
                found = [self.retriever.invoke(req.queries[0], config=configs[0], **kwargs)]
            else:
                found = self.retriever.batch(list(req.queries), config=configs, **kwargs) if req.queries else []
            return self._count_retrieval(req, found, running)
        config = self._read_args(req, running)
        return self._clean_reads(self._read.invoke(list(req.pairs), config=config), running)

    async def _aperform(self, req: Request, running: _Running) -> Any:
        if isinstance(req, Generate):
            sent, kwargs = self._generate_args(req, running)
            return self._count_generation(sent, await self.llm.ainvoke(sent, **kwargs), running)
        if self.cached is not None:
            futures, job = self._start_cached(req, running)
            return self._count_cached(req, await asyncio.gather(*futures), job, running)
        if isinstance(req, Retrieve):
            configs, kwargs = self._retrieve_args(req, running)
            retriever = self.retriever
            assert retriever is not None
            if kwargs and not self.atakes_k:  # the sync method takes k, the default async one does not
                calls = [
                    functools.partial(retriever.invoke, q, c, **kwargs)
                    for q, c in zip(req.queries, configs, strict=True)
                ]
                found = [await run_in_executor(c, call) for c, call in zip(configs, calls, strict=True)]
            elif len(req.queries) == 1:
                found = [await retriever.ainvoke(req.queries[0], config=configs[0], **kwargs)]
            else:
                found = await retriever.abatch(list(req.queries), config=configs, **kwargs) if req.queries else []
            return self._count_retrieval(req, found, running)
        config = self._read_args(req, running)
        return self._clean_reads(await self._read.ainvoke(list(req.pairs), config=config), running)

    # With a cache (``cache_ir``), each retrieval and each reading is a task of its own
    # (:mod:`searchain_graph.method.ir_tasks`); the misses run the plain calls, traced as above.
    def _start_cached(self, req: Retrieve | Read, running: _Running) -> tuple[list[Any], IRCall]:
        assert self.cached is not None
        if isinstance(req, Retrieve):
            configs, kwargs = self._retrieve_args(req, running)
            retriever = self.retriever
            assert retriever is not None
            by_query = dict(zip(req.queries, configs, strict=True))
            return self.cached.retrieve(req.queries, req.k, lambda q: retriever.invoke(q, config=by_query[q], **kwargs))
        config = self._read_args(req, running)
        return self.cached.read(req.pairs, lambda q, d: self._read.invoke([(q, d)], config=config)[0])

    def _count_cached(self, req: Retrieve | Read, results: Sequence[Any], job: IRCall, running: _Running) -> Any:
        hits = len(results) - job.misses
        if isinstance(req, Retrieve):
            running.usage = add_usage(running.usage, {"retrieval_cache_hits": hits})
            return self._count_retrieval(req, CachedIR.documents(results), running, job.notes)
        running.usage = add_usage(running.usage, {"reader_cache_hits": hits})
        return self._clean_reads(CachedIR.outputs(results), running)

    # The read run takes (query, document dict) pairs, plain data like the state; the reader gets
    # (query, Passage) pairs, the title from the document's metadata.
    def _read_pairs(self, pairs: list[tuple[str, DocumentDict]]) -> list[ReaderOutput]:
        assert self.reader is not None
        return read_pairs(self.reader, [(q, passage_of(d)) for q, d in pairs])

    async def _aread_pairs(self, pairs: list[tuple[str, DocumentDict]]) -> list[ReaderOutput]:
        assert self.reader is not None
        return await aread_pairs(self.reader, [(q, passage_of(d)) for q, d in pairs])
