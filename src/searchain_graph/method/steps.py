r"""One way to write a step: a generator that yields requests and returns its update.

Every node of SearChain and of every baseline is written the same way. A *step* is one function
``(state, settings) -> StepBody``: a generator that reads the state, yields a typed request
whenever it needs the LLM (:class:`Generate`), the retriever (:class:`Retrieve`) or the reader
(:class:`Read`), receives the answer at the ``yield``, and finally returns what it adds to the
state. It never calls a model itself, so the same body serves ``invoke`` and ``ainvoke``.

The :class:`~searchain_graph.method.driver.StepDriver` binds one LLM, retriever and reader and
turns a step into a graph node (:meth:`~searchain_graph.method.driver.StepDriver.node`). It
performs each request synchronously or asynchronously, traces it under the step and the round,
counts its cost as a ``usage`` delta, writes the round number (``rounds``, once per round, by the
step that opens one), records which step ran last (``last_step``) and starts a run afresh at the
entry step. A request may carry its own ``round`` label, where a method numbers its calls apart
from its steps (Self-Ask's generations). A worked example, a two-step
retrieve-then-answer method::

    def retrieve(state, settings):
        docs = yield Retrieve([state["question"]], k=3)  # receives one list per query
        return {"passages": docs[0]}

    def answer(state, settings):
        context = "\n".join(d["page_content"] for d in state["passages"])
        text = yield Generate.prompt(f"{context}\n\nQ: {state['question']}\nA:")
        return {"answer": text.strip()}

    driver = StepDriver("rag", llm, retriever=retriever, settings=MySettings(max_question_chars=500),
                        fresh={"passages": [], "answer": ""}, state_schema=MyState)
    builder = StateGraph(MyState)
    builder.add_node("retrieve", driver.node("retrieve", retrieve, starts_run=True, opens_round=True))
    builder.add_node("answer", driver.node("answer", answer))

``retrieve`` is the entry step: for a new run the driver validates the question, resets the
``fresh`` channels and sets ``rounds`` to 1 before the body sees the state. Each call is traced
with ``searchain_step``, ``searchain_round`` and ``searchain_method`` in its metadata, and the
update of each step carries its calls' ``usage`` (one LLM call: words and tokens in and out; one
retrieval per query; one reading per pair), which the state's ``add_usage`` reducer sums.

Why generators? LangGraph calls a node's sync function from ``invoke`` and its async one from
``ainvoke``; langgraph's own code writes each node twice. A generator body keeps the step's
logic in one place, in the order of the paper's Algorithm 1, and leaves the I/O to the driver.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.runtime import Runtime, get_runtime
from langgraph.types import Command

from searchain_graph.method.state import DocumentDict

__all__ = [
    "Generate",
    "Read",
    "Reply",
    "Request",
    "Retrieve",
    "Step",
    "StepBody",
    "StepFunction",
    "StepSettings",
    "reducers_of",
]


class Reply(str):
    """The text of an LLM reply, as a :class:`Generate` request receives it.

    A ``str`` (every step may treat it as one) that also says whether the reply was cut off
    before the model ended it (``truncated``: the model's ``finish_reason`` was ``"length"``, or
    the reply was cut at :data:`~searchain_graph.method.limits.MAX_REPLY_CHARS`), so that a step
    never checks the half-written last line of a cut reply. Store ``str(reply)`` in the state.
    """

    truncated: bool

    def __new__(cls, text: str, *, truncated: bool = False) -> Reply:
        """``text``, marked ``truncated`` or not."""
        reply = super().__new__(cls, text)
        reply.truncated = truncated
        return reply


@dataclass(frozen=True)
class Generate:
    """Ask the LLM; the step receives the reply's text.

    Attributes:
        messages: The conversation sent.
        stop: Stop sequences, if any.
        options: Call options (``temperature``, ``seed``) for sampled paths.
        step: The call's ``searchain_step`` label (default: the node's name).
        round: The call's ``searchain_round`` label (default: the step's round).
    """

    messages: tuple[BaseMessage, ...]
    stop: tuple[str, ...] | None = None
    options: tuple[tuple[str, Any], ...] = ()
    step: str | None = None
    round: int | None = None

    @classmethod
    def prompt(
        cls,
        prompt: str | Sequence[BaseMessage],
        *,
        stop: Sequence[str] | None = None,
        options: Mapping[str, Any] | None = None,
        step: str | None = None,
        round: int | None = None,
    ) -> Generate:
        """A request from a prompt string (one user message) or a list of messages."""
        messages = (HumanMessage(prompt),) if isinstance(prompt, str) else tuple(prompt)
        stops = tuple(stop) if stop is not None else None
        return cls(messages, stops, tuple(sorted((options or {}).items())), step, round)


@dataclass(frozen=True)
class Retrieve:
    """Retrieve for each query; the step receives one list of document dicts per query.

    Attributes:
        queries: The queries, retrieved as one batch.
        k: How many documents to keep per query (passed to a retriever that takes ``k``); ``None``
            keeps what the retriever returns.
        step: The calls' ``searchain_step`` label.
        round: The calls' ``searchain_round`` label (default: the step's round).
    """

    queries: tuple[str, ...]
    k: int | None = None
    step: str = "retrieve"
    round: int | None = None

    def __init__(
        self, queries: Sequence[str], k: int | None = None, step: str = "retrieve", round: int | None = None
    ) -> None:
        object.__setattr__(self, "queries", tuple(queries))
        object.__setattr__(self, "k", k)
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "round", round)


@dataclass(frozen=True)
class Read:
    """Read each (query, document) pair; the step receives one :class:`ReaderOutput` per pair.

    ``round`` labels the reading's ``searchain_round`` (default: the step's round).
    """

    pairs: tuple[tuple[str, DocumentDict], ...]
    step: str = "read"
    round: int | None = None

    def __init__(self, pairs: Sequence[tuple[str, DocumentDict]], step: str = "read", round: int | None = None) -> None:
        object.__setattr__(self, "pairs", tuple(pairs))
        object.__setattr__(self, "step", step)
        object.__setattr__(self, "round", round)


Request = Generate | Retrieve | Read
"""What a step may ask the driver for."""

StepBody = Generator[Request, Any, "dict[str, Any] | Command[Any]"]
"""A running step: yields requests, receives their results, returns the state update (or a
``Command`` with it, for a step that picks the next node)."""


class StepSettings(Protocol):
    """What the driver reads of a run's settings (every method's settings have these)."""

    @property
    def max_question_chars(self) -> int:
        """Longer questions are refused."""
        ...


StepFunction = Callable[[Any, Any], "StepBody | dict[str, Any] | Command[Any]"]
"""``(state, settings) -> StepBody``: one step of a method. A step that needs no LLM, retriever or
reader may return its update directly; a step that picks the next node returns a ``Command``
(from its generator, or directly)."""


def reducers_of(schema: type) -> dict[str, Callable[[Any, Any], Any]]:
    """The channels of a state ``TypedDict`` that have a reducer (``Annotated[T, reducer]``)."""
    found: dict[str, Callable[[Any, Any], Any]] = {}
    for name, hint in typing.get_type_hints(schema, include_extras=True).items():
        while typing.get_origin(hint) in (typing.NotRequired, typing.Required):
            hint = typing.get_args(hint)[0]
        if typing.get_origin(hint) is typing.Annotated:
            reducer = next((m for m in hint.__metadata__ if callable(m)), None)
            if reducer is not None:
                found[name] = reducer
    return found


class Step(Runnable[Any, Any]):
    """A graph node with a native sync and async body, and no run of its own.

    LangGraph runs a plain function's async path in a thread, and gives an async-only function no
    ``invoke``; a ``RunnableLambda(func, afunc)`` has both but shows every node twice in a trace
    (the graph's node run wrapping the lambda's). This is the pair without the extra run.
    """

    def __init__(
        self,
        name: str,
        func: Callable[[Any, Runtime[Any]], Any],
        afunc: Callable[[Any, Runtime[Any]], Any],
    ) -> None:
        self.name = name
        self.func = func
        self.afunc = afunc

    def invoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the sync body with the run's :class:`~langgraph.runtime.Runtime`."""
        return self.func(input, get_runtime())

    async def ainvoke(self, input: Any, config: RunnableConfig | None = None, **kwargs: Any) -> Any:
        """Run the async body with the run's :class:`~langgraph.runtime.Runtime`."""
        return await self.afunc(input, get_runtime())
