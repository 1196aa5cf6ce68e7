r"""The paper's baselines as LangGraph graphs sharing SearChain's LLM, retriever and reader.

One factory per method; each returns a compiled graph with input ``{"question": str}`` and
output :class:`MethodOutput` (the keys ``question``, ``answer``, ``final_content``, ``rounds``,
``usage`` and ``warnings`` mean what they mean in SearChain's output; ``passages`` are the
retrieved passages the method used)::

    create_cot_graph(llm)                        # CoT: few-shot chain of thought, no retrieval
    create_direct_graph(llm)                     # direct answer, no retrieval
    create_direct_retrieval_graph(llm, ret)      # the paper's "Direct Retrieval": top-k, then answer
    create_self_ask_graph(llm, ret, reader)      # Self-Ask with a search engine (Press et al., 2023)
    create_ircot_graph(llm, ret)                 # IRCoT (Trivedi et al., 2023)
    create_searchain_no_ir_graph(llm)            # SearChain w/o IR (Figure 8)

The other SearChain ablations are ``create_searchain_graph(..., verification=False)`` and
``completion=False``.

Design choices (see each factory for details):

* **Self-Ask** answers each follow-up from the top-1 passage retrieved for it: with the
  reader's *g* when a reader is given and *g* is non-empty, otherwise by asking the LLM to
  read that passage (:data:`~searchain_graph.method.prompts.SELF_ASK_READ_PROMPT`). Press et al. used a
  search engine's answer box; the reader's span is the closest analogue, the LLM reading the
  snippet is their fallback. After ``max_steps`` follow-ups the model is told to answer.
* **IRCoT** retrieves K paragraphs with the question, then alternates one chain-of-thought
  sentence (the first sentence of the reply, cut at a newline) and K more paragraphs retrieved
  with that sentence, keeping at most ``max_paragraphs`` (the oldest are dropped). It stops at a
  sentence containing "answer is", at an empty sentence, or after ``max_steps`` sentences. The
  answer is then read by a direct QA prompt over the collected paragraphs (IRCoT's "Direct
  Prompting" reader, ``answer_mode="reader"``) or parsed from the chain of thought
  (``answer_mode="cot"``, which falls back to reading when the chain states no answer).

Every LLM call, retrieval and reading runs under its own run name (``cot_generation``,
``direct_answer``, ``coq_generation``, ``self_ask_generation``, ``follow_up_answer``, ``reason``,
``answer``, ``retrieve``, ``read``) with ``searchain_step``, ``searchain_round`` and
``searchain_method`` in its metadata, like SearChain's.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, cast

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
from typing_extensions import TypedDict

from searchain_graph.ir.corpus import passage_text
from searchain_graph.ir.readers.base import Reader, aread_pairs, read_pairs
from searchain_graph.method.calls import count_usage, doc_dict, empty_usage, message_text, to_messages, trace_config
from searchain_graph.method.context import normalize_task
from searchain_graph.method.parsing import extract_final_answer, parse_chain
from searchain_graph.method.prompts import (
    BASELINE_ANSWER_FORMATS,
    BASELINE_DEMONSTRATIONS,
    BASELINE_EXAMPLE_SEPARATOR,
    COQ_PROMPT_NO_IR,
    COT_EXAMPLE,
    COT_PROMPT,
    DIRECT_EXAMPLE,
    DIRECT_PROMPT,
    DIRECT_RETRIEVAL_EXAMPLE,
    DIRECT_RETRIEVAL_PROMPT,
    IRCOT_EXAMPLE,
    IRCOT_READER_PROMPT,
    IRCOT_REASON_PROMPT,
    NO_PARAGRAPHS,
    PARAGRAPH,
    PARAGRAPH_SEPARATOR,
    SELF_ASK_EXAMPLE,
    SELF_ASK_FORCE_FINAL,
    SELF_ASK_INTERMEDIATE,
    SELF_ASK_NO_PASSAGE,
    SELF_ASK_PROMPT,
    SELF_ASK_READ_PROMPT,
    SELF_ASK_STEP,
    Demonstration,
)
from searchain_graph.method.question import InvalidQuestionError, task_question, validate_question
from searchain_graph.method.state import DocumentDict, InputState, Usage

__all__ = [
    "InvalidQuestionError",
    "MethodOutput",
    "MethodState",
    "create_cot_graph",
    "create_direct_graph",
    "create_direct_retrieval_graph",
    "create_ircot_graph",
    "create_searchain_no_ir_graph",
    "create_self_ask_graph",
    "final_answer",
    "first_sentence",
]

AnswerMode = Literal["reader", "cot"]


class MethodOutput(TypedDict):
    """What every baseline graph returns (a common shape for evaluation)."""

    question: str
    answer: str
    """The short final answer (Yes/No for ``yesno``, SUPPORTS/REFUTES for ``fact``, a paragraph for ``longform``)."""
    final_content: str
    """The method's final text: the last reply, or the whole chain for IRCoT (CoT mode) and Self-Ask."""
    rounds: int
    """LLM-IR interaction rounds: retrievals for IRCoT, follow-ups for Self-Ask, 1 for the others."""
    usage: Usage
    passages: list[DocumentDict]
    """The retrieved passages the method used, deduplicated, in the order they were first used."""
    warnings: list[str]


class MethodState(MethodOutput):
    """The working state of a baseline run (plain values only: msgpack-serialisable)."""

    pending: NotRequired[bool]
    """True while a run is under way; every run ends with it False (a new invocation restarts)."""
    messages: NotRequired[list[dict[str, str]]]
    """Self-Ask's conversation, as ``{"role", "content"}`` dicts."""
    steps: NotRequired[list[dict[str, Any]]]
    """Self-Ask's follow-ups: ``question``, ``answer``, ``source`` (reader/llm) and ``document``."""
    query: NotRequired[str | None]
    """The next retrieval query (Self-Ask's follow-up, IRCoT's latest sentence)."""
    paragraphs: NotRequired[list[DocumentDict]]
    """IRCoT's collected paragraphs (at most ``max_paragraphs``, oldest dropped)."""
    cot: NotRequired[list[str]]
    """IRCoT's chain-of-thought sentences so far."""
    done: NotRequired[bool]
    """IRCoT: the chain stated an answer (or broke off): no more reasoning steps."""


# -- shared helpers ---------------------------------------------------------------------------------


def _config(step: str, rnd: int, method: str, **extra: Any) -> RunnableConfig:
    return trace_config(step, rnd, searchain_method=method, **extra)


_ANSWER_MARK = re.compile(r"(?:final\s+)?answer\s*(?:is\s*:?|:)", re.IGNORECASE)
_LABEL = re.compile(r"^\s*(?:A|Answer|Final answer)\s*:\s*", re.IGNORECASE)
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def final_answer(text: str | None, task: str) -> str:
    """The short answer stated in ``text`` (a CoT, a direct reply or a Self-Ask ending).

    "... answer is X" wins (:func:`~searchain_graph.method.parsing.extract_final_answer`); otherwise the
    first line of a direct reply, without an "A:"/"Answer:" label. ``yesno`` answers are reduced to
    ``Yes``/``No`` and ``fact`` answers to ``SUPPORTS``/``REFUTES`` whenever the text states one;
    ``longform`` answers keep the whole paragraph after the last "answer is".
    """
    text = (text or "").strip()
    if not text:
        return ""
    marks = list(_ANSWER_MARK.finditer(text))
    if task == "longform":
        return " ".join((text[marks[-1].end() :] if marks else _LABEL.sub("", text)).split())
    if marks or task == "fact":
        found = extract_final_answer(text, task)
        if found:
            return found
    line = next((ln for ln in text.splitlines() if ln.strip()), "")
    line = _LABEL.sub("", line).strip(" .\"'*")
    if task == "yesno":
        match = _YES_NO.search(line)
        if match:
            return match.group(1).capitalize()
        return extract_final_answer(text, task) or line
    return line


_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\b[A-Z]\.)([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")


def _sentences(line: str) -> list[str]:
    out, start = [], 0
    for match in _SENTENCE_END.finditer(line):
        out.append(line[start : match.start() + len(match.group(1))].strip())
        start = match.end()
    out.append(line[start:].strip())
    return [s for s in out if s]


def reasoning_steps(text: str) -> int:
    """Chain-of-thought steps in ``text``: its sentences, less the one that states the answer.

    This is how Table 4 counts CoT's steps (the paper's "number of reasoning steps").
    """
    lines = (" ".join(_LABEL.sub("", ln).split()) for ln in (text or "").splitlines())
    sentences = [s for ln in lines for s in _sentences(ln)]
    return sum(1 for s in sentences if "answer is" not in s.lower())


def first_sentence(reply: str, previous: Sequence[str] = ()) -> str:
    """IRCoT's next chain-of-thought sentence: the first new sentence of the reply's first line.

    Leading "A:" labels are dropped, and sentences that repeat ``previous`` (a chat model that
    restates the chain so far) are skipped. Returns "" when the reply has no new sentence.
    """
    line = next((ln for ln in (reply or "").splitlines() if ln.strip()), "")
    line = " ".join(_LABEL.sub("", line).split())
    seen = {" ".join(s.split()) for s in previous}
    return next((s for s in _sentences(line) if s not in seen), "")


def _paragraph(title: str, text: str) -> str:
    title = " ".join(title.split())
    return PARAGRAPH.format(title=title, text=text.strip()) if title else text.strip()


def _paragraphs(docs: Sequence[DocumentDict]) -> str:
    if not docs:
        return NO_PARAGRAPHS
    return PARAGRAPH_SEPARATOR.join(_paragraph(str(d["metadata"].get("title") or ""), d["page_content"]) for d in docs)


def _doc_key(doc: DocumentDict) -> tuple[str, ...]:
    ident = doc["metadata"].get("id")
    if ident is not None:
        return ("id", str(ident))
    return ("text", str(doc["metadata"].get("title") or ""), doc["page_content"])


def _merge(held: Sequence[DocumentDict], new: Sequence[DocumentDict]) -> list[DocumentDict]:
    """``held`` then the documents of ``new`` that it lacks, in order."""
    out = list(held)
    keys = {_doc_key(d) for d in out}
    for doc in new:
        if _doc_key(doc) not in keys:
            keys.add(_doc_key(doc))
            out.append(doc)
    return out


def _demos(task: str) -> tuple[Demonstration, ...]:
    return BASELINE_DEMONSTRATIONS[task]


def _examples(task: str, render: Callable[[Demonstration, str], str]) -> str:
    return BASELINE_EXAMPLE_SEPARATOR.join(render(d, task_question(d.question, task)) for d in _demos(task))


def _cot_answer(answer: str) -> str:
    return answer.rstrip(" .")


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


@dataclass(frozen=True)
class _Retrieve:
    query: str
    k: int
    round: int


@dataclass(frozen=True)
class _Read:
    pairs: list[tuple[str, str]]
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
    def _read_sync(self, pairs: list[tuple[str, str]]) -> list[tuple[str, float]]:
        assert self.reader is not None
        return [(o.answer, o.confidence) for o in read_pairs(self.reader, pairs)]

    async def _read_async(self, pairs: list[tuple[str, str]]) -> list[tuple[str, float]]:
        assert self.reader is not None
        return [(o.answer, o.confidence) for o in await aread_pairs(self.reader, pairs)]

    def _retrieve_args(self, req: _Retrieve) -> tuple[RunnableConfig, dict[str, Any]]:
        config = _config("retrieve", req.round, self.method, searchain_query=req.query)
        return config, ({"k": req.k} if self.takes_k else {})

    def _perform(self, req: _Request) -> Any:
        if isinstance(req, _Generate):
            config = _config(req.step, req.round, self.method)
            return self.llm.invoke(req.messages, config=config, stop=req.stop)
        if isinstance(req, _Retrieve):
            assert self.retriever is not None
            config, kwargs = self._retrieve_args(req)
            return list(self.retriever.invoke(req.query, config=config, **kwargs))[: req.k]
        return self.read.invoke(req.pairs, config=_config("read", req.round, self.method))

    async def _aperform(self, req: _Request) -> Any:
        if isinstance(req, _Generate):
            config = _config(req.step, req.round, self.method)
            return await self.llm.ainvoke(req.messages, config=config, stop=req.stop)
        if isinstance(req, _Retrieve):
            assert self.retriever is not None
            config, kwargs = self._retrieve_args(req)
            if kwargs and not self.atakes_k:  # the sync method takes k, the default async one does not
                invoke = functools.partial(self.retriever.invoke, req.query, config, **kwargs)
                return list(await run_in_executor(config, invoke))[: req.k]
            return list(await self.retriever.ainvoke(req.query, config=config, **kwargs))[: req.k]
        return await self.read.ainvoke(req.pairs, config=_config("read", req.round, self.method))

    def node(self, body: Callable[[MethodState], _Node], name: str) -> RunnableLambda[MethodState, dict[str, Any]]:
        """Wrap a generator node body as a runnable with a sync and an async driver."""

        def run(state: MethodState) -> dict[str, Any]:
            gen, result = body(state), None
            try:
                while True:
                    result = self._perform(gen.send(result))
            except StopIteration as stop:
                return cast(dict[str, Any], stop.value)

        async def arun(state: MethodState) -> dict[str, Any]:
            gen, result = body(state), None
            try:
                while True:
                    result = await self._aperform(gen.send(result))
            except StopIteration as stop:
                return cast(dict[str, Any], stop.value)

        return RunnableLambda(run, afunc=arun, name=name)

    # -- request helpers (used with ``yield from``) ----------------------------------------------
    @staticmethod
    def generate(
        usage: Usage, prompt: str | list[BaseMessage], step: str, rnd: int, stop: list[str] | None = None
    ) -> Generator[_Request, Any, tuple[str, Usage]]:
        """Ask the LLM; return its text and the usage counted with it."""
        sent: list[BaseMessage] = [HumanMessage(prompt)] if isinstance(prompt, str) else prompt
        reply = yield _Generate(sent, step, rnd, stop)
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


# -- one-shot methods: CoT, direct, SearChain w/o IR, Direct Retrieval ---------------------------


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


def _compile(
    builder: StateGraph[MethodState, None, InputState, MethodOutput],
    checkpointer: BaseCheckpointSaver[Any] | bool | None,
    name: str,
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    return builder.compile(checkpointer=checkpointer, name=name)


def _builder() -> StateGraph[MethodState, None, InputState, MethodOutput]:
    return StateGraph(MethodState, input_schema=InputState, output_schema=MethodOutput)


def _single_node_graph(
    methods: _Methods,
    step: str,
    render: Callable[[MethodState, str], str],
    *,
    retry_policy: RetryPolicy | None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None,
    name: str,
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    builder = _builder()
    builder.add_node(step, methods.node(_one_shot(methods, step, render), step), retry_policy=retry_policy)
    builder.add_edge(START, step)
    builder.add_edge(step, END)
    return _compile(builder, checkpointer, name)


def create_cot_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "cot",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """Chain-of-Thought (Wei et al., 2022): two demonstrations, "Let's think step by step", no retrieval.

    Args:
        llm: Any LangChain chat model.
        task: ``multihop``, ``yesno``, ``fact``, ``longform`` or ``slot_filling`` (or a dataset
            alias such as ``strategyqa``); selects the demonstrations and the answer format.
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = 1 and the answer parsed from "So the answer is: X.".
    """
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars)

    def render(state: MethodState, question: str) -> str:
        examples = _examples(
            methods.task,
            lambda d, q: COT_EXAMPLE.format(question=q, reasoning=" ".join(d.reasoning), answer=_cot_answer(d.answer)),
        )
        return COT_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[methods.task], examples=examples, question=question
        )

    return _single_node_graph(
        methods, "cot_generation", render, retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )


def create_direct_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "direct",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """Direct prompting without retrieval: two question-answer demonstrations, then the question.

    Args:
        llm: Any LangChain chat model.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (``rounds`` = 1).
    """
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars)

    def render(state: MethodState, question: str) -> str:
        examples = _examples(methods.task, lambda d, q: DIRECT_EXAMPLE.format(question=q, answer=d.answer))
        return DIRECT_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[methods.task], examples=examples, question=question
        )

    return _single_node_graph(
        methods, "direct_answer", render, retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )


def create_searchain_no_ir_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "searchain_no_ir",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """SearChain w/o IR: one Chain-of-Query generation with the paper's Figure 8 prompt.

    The answer is taken from the chain's ``[Final Content]`` (the whole reply when it has none)
    by :func:`~searchain_graph.method.parsing.extract_final_answer`, falling back to the chain's last
    ``[Answer]``, as SearChain does. ``final_content`` is the whole reply (the chain and its
    ``[Final Content]``), so that :func:`~searchain_graph.method.parsing.parse_chain` recovers the nodes.

    Args:
        llm: Any LangChain chat model.
        task: The task family; selects the answer normalisation (Figure 8 is one prompt for all,
            with the ``yesno``/``fact`` question suffix of Figures 9-10).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (``rounds`` = 1).
    """
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars)
    step = "coq_generation"

    def body(state: MethodState) -> _Node:
        update = methods.start(state)
        prompt = COQ_PROMPT_NO_IR.format(question=methods.question(update["question"]))
        text, usage = yield from methods.generate(update["usage"], prompt, step, 1)
        parsed = parse_chain(text)
        warnings = [f"round 1: {w}" for w in parsed.warnings]
        content = parsed.final_content or " ".join(text.split())
        answer = (
            extract_final_answer(content, methods.task)
            or (content if methods.task == "longform" else None)
            or next((n["answer"] for n in reversed(parsed.nodes) if n["answer"]), "")
        )
        if not answer:
            warnings.append("the LLM stated no answer")
        return {
            **update,
            "usage": usage,
            "rounds": 1,
            "final_content": text.strip(),
            "answer": answer,
            "warnings": warnings,
            "pending": False,
        }

    builder = _builder()
    builder.add_node(step, methods.node(body, step), retry_policy=retry_policy)
    builder.add_edge(START, step)
    builder.add_edge(step, END)
    return _compile(builder, checkpointer, name)


def create_direct_retrieval_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    *,
    k: int = 3,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "direct_retrieval",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """The paper's "Direct Retrieval": retrieve the top ``k`` with the question, give them, answer.

    The prompt is IRCoT's paragraph layout ("Wikipedia Title: ..." then the text) with two
    demonstrations; the retriever is called with ``k=k`` when it accepts it, and its result
    is cut to ``k`` either way.

    Args:
        llm: Any LangChain chat model.
        retriever: Any LangChain retriever.
        k: Passages retrieved and shown.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the retriever and the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (``rounds`` = 1).
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k!r}")
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars, retriever=retriever)

    def retrieve(state: MethodState) -> _Node:
        update = methods.start(state)
        docs, usage = yield from methods.retrieve(update["usage"], update["question"], k, 1)
        warnings = [] if docs else ["round 1: no passage retrieved"]
        return {**update, "usage": usage, "passages": docs, "warnings": warnings}

    def render(state: MethodState, question: str) -> str:
        examples = _examples(
            methods.task,
            lambda d, q: DIRECT_RETRIEVAL_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                answer=d.answer,
            ),
        )
        return DIRECT_RETRIEVAL_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[methods.task],
            examples=examples,
            paragraphs=_paragraphs(state["passages"]),
            question=question,
        )

    builder = _builder()
    builder.add_node("retrieve", methods.node(retrieve, "retrieve"), retry_policy=retry_policy)
    builder.add_node(
        "direct_answer",
        methods.node(_one_shot(methods, "direct_answer", render), "direct_answer"),
        retry_policy=retry_policy,
    )
    builder.add_edge(START, "retrieve")
    builder.add_edge("retrieve", "direct_answer")
    builder.add_edge("direct_answer", END)
    return _compile(builder, checkpointer, name)


# -- Self-Ask -------------------------------------------------------------------------------------

_FOLLOW_UP = re.compile(r"follow[\s-]*up\s*:\s*(?P<q>[^\n]*)", re.IGNORECASE)
_FINAL = re.compile(r"final\s+answer\s*(?:is|:)", re.IGNORECASE)
_INTERMEDIATE = re.compile(r"intermediate\s+answer\s*:", re.IGNORECASE)
_NEEDED = re.compile(r"^\s*(?:are\s+follow\s+up\s+questions\s+needed\s+here\s*:)?\s*(?:yes|no)\b\.?", re.IGNORECASE)
_SELF_ASK_STOP = ["Intermediate answer:"]


def create_self_ask_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    reader: Reader | None = None,
    *,
    max_steps: int = 5,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "self_ask",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """Self-Ask with a search engine (Press et al., 2023).

    The LLM writes "Are follow up questions needed here: Yes. Follow up: ..." (generation
    stops at "Intermediate answer:", and anything after it is cut); the follow-up is answered
    from its top-1 retrieved passage and returned as "Intermediate answer: ...", in a chat
    turn, until the model writes "So the final answer is: ...". A follow-up is answered:

    * by the reader's *g*, when ``reader`` is given and *g* is non-empty (the analogue of the
      search engine's answer box that Press et al. used);
    * otherwise by the LLM reading the passage (:data:`~searchain_graph.method.prompts.SELF_ASK_READ_PROMPT`;
      with no passage it answers from its own knowledge), as Press et al. fall back to the snippet.

    After ``max_steps`` follow-ups the last intermediate answer comes with the instruction to
    answer now, so the model is called at most ``max_steps + 1`` times for the chain (plus one
    reading call per follow-up the reader cannot answer). A reply with neither a follow-up nor
    a final answer ends the run, with a warning, its first line taken as the answer.

    Args:
        llm: Any LangChain chat model.
        retriever: Any LangChain retriever; its first document answers a follow-up.
        reader: Optional reader (``read(query, passage)``) that extracts *g* from that passage.
        max_steps: Most follow-up questions.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM, retriever or reader.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = the number of follow-ups answered and ``final_content`` the Self-Ask
        transcript ("Follow up:"/"Intermediate answer:" lines and the final reply).
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars, retriever=retriever, reader=reader)

    def prompt(question: str) -> str:
        def render(d: Demonstration, q: str) -> str:
            steps = "\n".join(SELF_ASK_STEP.format(question=fq, answer=fa) for fq, fa in d.follow_ups)
            return SELF_ASK_EXAMPLE.format(question=q, follow_ups=steps, answer=d.answer)

        return SELF_ASK_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[methods.task],
            examples=_examples(methods.task, render),
            question=question,
        )

    def transcript(steps: Sequence[dict[str, Any]], last: str) -> str:
        lines = [SELF_ASK_STEP.format(question=s["question"], answer=s["answer"]) for s in steps]
        return "\n".join([*lines, last]).strip()

    def generation(state: MethodState) -> _Node:
        fresh = not state.get("pending")
        update = methods.start(state, messages=[], steps=[], query=None) if fresh else {}
        current = cast(MethodState, {**state, **update})
        messages = list(current.get("messages") or [])
        if fresh:
            messages = [{"role": "user", "content": prompt(methods.question(current["question"]))}]
        steps = list(current.get("steps") or [])
        rnd = len(steps) + 1
        text, usage = yield from methods.generate(
            current["usage"], to_messages(messages), "self_ask_generation", rnd, _SELF_ASK_STOP
        )
        warnings = list(current["warnings"])
        cut = _INTERMEDIATE.search(text)
        if cut:
            text = text[: cut.start()]
        follow_up, final = _FOLLOW_UP.search(text), _FINAL.search(text)
        forced = len(steps) >= max_steps
        base = {**update, "usage": usage, "rounds": len(steps)}
        if follow_up and (final is None or follow_up.start() < final.start()) and not forced:
            query = " ".join(follow_up.group("q").split())
            if query:
                reply = text[: follow_up.end()].strip()
                return {
                    **base,
                    "messages": messages + [{"role": "assistant", "content": reply}],
                    "query": query,
                    "warnings": warnings,
                }
        reply = text.strip()
        if forced and follow_up and not final:
            warnings.append(f"stopped at max_steps={max_steps}: the model still asked a follow up")
        elif not final and not forced:
            warnings.append("the model wrote neither a follow up nor a final answer; its reply is taken as the answer")
        answer_text = reply[final.start() :] if final else (reply if steps else _NEEDED.sub("", reply, count=1))
        out = methods.finish(base, answer_text, warnings, query=None)
        out["final_content"] = transcript(steps, reply)
        out["messages"] = messages + [{"role": "assistant", "content": reply}]
        return out

    def follow_up(state: MethodState) -> _Node:
        query = state.get("query") or ""
        steps = list(state.get("steps") or [])
        rnd = len(steps) + 1
        warnings = list(state["warnings"])
        docs, usage = yield from methods.retrieve(state["usage"], query, 1, rnd)
        doc = docs[0] if docs else None
        passage = passage_text(Document(page_content=doc["page_content"], metadata=doc["metadata"])) if doc else ""
        answer, source = "", "llm"
        if doc is None:
            warnings.append(f"round {rnd}: no passage retrieved for {query[:80]!r}")
        elif methods.reader is not None:
            outputs = yield _Read([(query, passage)], rnd)
            usage = {**usage, "reader_calls": usage["reader_calls"] + 1}
            answer, source = (str(outputs[0][0]).strip(), "reader") if outputs and outputs[0][0] else ("", "llm")
        if not answer:
            read_prompt = SELF_ASK_READ_PROMPT.format(passage=passage or SELF_ASK_NO_PASSAGE, question=query)
            text, usage = yield from methods.generate(usage, read_prompt, "follow_up_answer", rnd, ["\n"])
            answer = final_answer(text, "multihop") or "unknown"
        answer = " ".join(answer.split())
        steps.append({"question": query, "answer": answer, "source": source, "document": doc})
        template = SELF_ASK_FORCE_FINAL if len(steps) >= max_steps else SELF_ASK_INTERMEDIATE
        return {
            "usage": usage,
            "steps": steps,
            "rounds": len(steps),
            "query": None,
            "passages": _merge(state["passages"], [doc] if doc else []),
            "warnings": warnings,
            "messages": list(state.get("messages") or [])
            + [{"role": "user", "content": template.format(answer=answer)}],
        }

    def route(state: MethodState) -> Literal["follow_up", "__end__"]:
        return "follow_up" if state.get("pending") and state.get("query") else "__end__"

    builder = _builder()
    builder.add_node("self_ask_generation", methods.node(generation, "self_ask_generation"), retry_policy=retry_policy)
    builder.add_node("follow_up", methods.node(follow_up, "follow_up"), retry_policy=retry_policy)
    builder.add_edge(START, "self_ask_generation")
    builder.add_conditional_edges("self_ask_generation", route, ["follow_up", END])
    builder.add_edge("follow_up", "self_ask_generation")
    return _compile(builder, checkpointer, name)


# -- IRCoT ----------------------------------------------------------------------------------------

_ANSWER_IS = re.compile(r"\banswer\s+is\b", re.IGNORECASE)


def create_ircot_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    *,
    k: int = 4,
    max_steps: int = 6,
    max_paragraphs: int = 15,
    task: str = "multihop",
    answer_mode: AnswerMode = "reader",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "ircot",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    r"""IRCoT: interleaving retrieval with chain-of-thought reasoning (Trivedi et al., 2023).

    ``retrieve`` (K paragraphs for the question) then, in turn, ``reason`` (the LLM writes the
    next CoT sentence from the question, the collected paragraphs and the CoT so far; the reply
    is generated with stop sequence "\\n" and cut to its first new sentence) and ``retrieve``
    (K more paragraphs with that sentence as the query; those already held are skipped and
    the oldest are dropped beyond ``max_paragraphs``). The loop ends when a sentence contains
    "answer is", when the model writes no new sentence, or after ``max_steps`` sentences (the
    last one's paragraphs are still retrieved, for the reader). Then ``answer``:

    * ``answer_mode="reader"``: IRCoT's QA reader, a direct QA prompt over the collected
      paragraphs (:data:`~searchain_graph.method.prompts.IRCOT_READER_PROMPT`, IRCoT's "Direct
      Prompting" reader); ``final_content`` is its reply.
    * ``answer_mode="cot"``: the answer stated by the chain of thought ("So the answer is:
      X"), no further LLM call; ``final_content`` is the whole chain. A chain that states no
      answer falls back to the reader, with a warning.

    Args:
        llm: Any LangChain chat model; it reasons and (``reader`` mode) answers.
        retriever: Any LangChain retriever; called with ``k=k`` when it accepts it, its result
            cut to ``k`` either way.
        k: Paragraphs retrieved per step (IRCoT's K, 2-8 in its paper).
        max_steps: Most CoT sentences.
        max_paragraphs: Most paragraphs shown to the LLM (15 in IRCoT's paper).
        task: The task family (see :func:`create_cot_graph`).
        answer_mode: ``"reader"`` or ``"cot"`` (see above).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM or the retriever.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = the retrieval calls (1 + the sentences used as queries) and ``passages``
        every paragraph the LLM was shown.
    """
    for label, value in (("k", k), ("max_steps", max_steps), ("max_paragraphs", max_paragraphs)):
        if value < 1:
            raise ValueError(f"{label} must be >= 1, got {value!r}")
    if answer_mode not in ("reader", "cot"):
        raise ValueError(f"answer_mode must be 'reader' or 'cot', got {answer_mode!r}")
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars, retriever=retriever)
    answer_format = BASELINE_ANSWER_FORMATS[methods.task]

    def reason_prompt(question: str, paragraphs: Sequence[DocumentDict], cot: Sequence[str]) -> str:
        examples = _examples(
            methods.task,
            lambda d, q: IRCOT_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                reasoning=" ".join(d.reasoning),
                answer=_cot_answer(d.answer),
            ),
        )
        return IRCOT_REASON_PROMPT.format(
            answer_format=answer_format,
            examples=examples,
            paragraphs=_paragraphs(paragraphs),
            question=question,
            cot=" ".join(cot),
        ).rstrip()

    def reader_prompt(question: str, paragraphs: Sequence[DocumentDict]) -> str:
        examples = _examples(
            methods.task,
            lambda d, q: DIRECT_RETRIEVAL_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                answer=d.answer,
            ),
        )
        return IRCOT_READER_PROMPT.format(
            answer_format=answer_format, examples=examples, paragraphs=_paragraphs(paragraphs), question=question
        )

    def retrieve(state: MethodState) -> _Node:
        fresh = not state.get("pending")
        update = methods.start(state, paragraphs=[], cot=[], query=None, done=False) if fresh else {}
        current = cast(MethodState, {**state, **update})
        query = current["question"] if fresh else (current.get("query") or current["question"])
        rnd = int(current["rounds"]) + 1
        docs, usage = yield from methods.retrieve(current["usage"], query, k, rnd)
        warnings = list(current["warnings"])
        if not docs:
            warnings.append(f"round {rnd}: no paragraph retrieved for {query[:80]!r}")
        paragraphs = _merge(current.get("paragraphs") or [], docs)
        dropped = len(paragraphs) - max_paragraphs
        if dropped > 0:
            paragraphs = paragraphs[dropped:]
        return {
            **update,
            "usage": usage,
            "rounds": rnd,
            "paragraphs": paragraphs,
            "passages": _merge(current["passages"], paragraphs),
            "query": None,
            "warnings": warnings,
        }

    def reason(state: MethodState) -> _Node:
        cot = list(state.get("cot") or [])
        step = len(cot) + 1
        prompt = reason_prompt(methods.question(state["question"]), state.get("paragraphs") or [], cot)
        text, usage = yield from methods.generate(state["usage"], prompt, "reason", state["rounds"], ["\n"])
        sentence = first_sentence(text, cot)
        warnings = list(state["warnings"])
        if not sentence:
            warnings.append(f"step {step}: the model wrote no new sentence; the chain ends here")
            return {"usage": usage, "warnings": warnings, "done": True, "query": None}
        cot.append(sentence)
        done = bool(_ANSWER_IS.search(sentence))
        if not done and step >= max_steps:
            warnings.append(f"stopped at max_steps={max_steps} before the chain stated an answer")
        return {"usage": usage, "cot": cot, "warnings": warnings, "done": done, "query": None if done else sentence}

    def answer(state: MethodState) -> _Node:
        cot = list(state.get("cot") or [])
        chain = " ".join(cot)
        warnings = list(state["warnings"])
        usage = state["usage"]
        if answer_mode == "cot":
            if cot and _ANSWER_IS.search(cot[-1]):
                return methods.finish({"usage": usage}, chain, warnings, query=None)
            warnings.append("the chain of thought states no answer; the reader answers instead")
        prompt = reader_prompt(methods.question(state["question"]), state.get("paragraphs") or [])
        text, usage = yield from methods.generate(usage, prompt, "answer", state["rounds"])
        if not text.strip():
            warnings.append("the LLM returned empty output")
        return methods.finish({"usage": usage}, text, warnings, query=None)

    def after_reason(state: MethodState) -> Literal["retrieve", "answer"]:
        return "retrieve" if state.get("query") and not state.get("done") else "answer"

    def after_retrieve(state: MethodState) -> Literal["reason", "answer"]:
        return "answer" if len(state.get("cot") or []) >= max_steps else "reason"

    builder = _builder()
    builder.add_node("retrieve", methods.node(retrieve, "retrieve"), retry_policy=retry_policy)
    builder.add_node("reason", methods.node(reason, "reason"), retry_policy=retry_policy)
    builder.add_node("answer", methods.node(answer, "answer"), retry_policy=retry_policy)
    builder.add_edge(START, "retrieve")
    builder.add_conditional_edges("retrieve", after_retrieve, ["reason", "answer"])
    builder.add_conditional_edges("reason", after_reason, ["retrieve", "answer"])
    builder.add_edge("answer", END)
    return _compile(builder, checkpointer, name)
