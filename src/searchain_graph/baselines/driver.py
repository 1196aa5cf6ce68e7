"""How a baseline is built on the step protocol of :mod:`searchain_graph.method.steps`.

Every node of every baseline is written the way SearChain's are: a step ``(state, settings) ->
StepBody``, a generator that yields :class:`~searchain_graph.method.steps.Generate` (the LLM),
:class:`~searchain_graph.method.steps.Retrieve` (the retriever) and
:class:`~searchain_graph.method.steps.Read` (the reader) requests, receives their results and
returns its update. :func:`baseline_driver` binds a baseline's LLM, retriever and reader in a
:class:`~searchain_graph.method.driver.StepDriver` with its :class:`BaselineSettings` and the values
a run starts with; the driver performs each request with ``invoke`` or ``ainvoke``, traces it
with ``searchain_step``, ``searchain_round`` and ``searchain_method`` metadata, adds its cost to
the step's ``usage`` (a delta, summed by the state's reducer), starts a new run at the entry step
(``starts_run``, unless the last step is one of ``continues_after``) and writes ``rounds`` on a
step that opens a round (``opens_round``). A step whose ``rounds`` means something else (ReAct's
searches, Least-to-Most's sub-questions) returns it itself, and a request whose call belongs to
another round than its step's (a sampled path, a ReAct step, a verified sentence) names it
(``round=``). Also here: the one-prompt step of CoT, direct prompting and Direct
Retrieval's answer (:func:`one_shot`), a run's last update (:func:`finish`), a sampled path's call
options (:func:`sampling_options`), the graph builder, and :func:`blocking_node` for the steps that
run a whole program (LangChain's agent, DSPy) rather than single calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables.config import run_in_executor
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodOutput, MethodState, final_answer, states_answer
from searchain_graph.ir.readers.base import Reader
from searchain_graph.method.adaptations.turns import check_layout
from searchain_graph.method.context import normalize_task
from searchain_graph.method.driver import StepDriver
from searchain_graph.method.limits import bounded_output
from searchain_graph.method.question import task_question
from searchain_graph.method.state import InputState
from searchain_graph.method.steps import Generate, Step, StepBody, StepFunction

__all__ = [
    "BaselineGraph",
    "BaselineSettings",
    "CUT_BEFORE_ANSWER",
    "baseline_driver",
    "blocking_node",
    "compile_graph",
    "finish",
    "graph_builder",
    "one_node_graph",
    "one_shot",
    "sampling_options",
]

BaselineGraph = CompiledStateGraph[MethodState, None, InputState, MethodOutput]
"""What every baseline factory returns: input ``{"question": str}``, output :class:`MethodOutput`."""


@dataclass(frozen=True)
class BaselineSettings:
    """The settings a baseline's steps read: the task family and the longest question taken.

    Raises:
        ValueError: ``max_question_chars`` is below 1, or ``task`` is unknown.
    """

    task: str = "multihop"
    """The task family, normalised (``strategyqa`` -> ``yesno``): demonstrations and answer format."""
    max_question_chars: int = 2000
    """Longer questions raise :class:`~searchain_graph.method.question.InvalidQuestionError`."""
    demonstrations: str = "instruction"
    """Where a prompt's worked examples go (SearChain w/o IR reads it): see
    :data:`~searchain_graph.method.adaptations.turns.DEMONSTRATION_LAYOUTS`."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_question_chars, int) or self.max_question_chars < 1:
            raise ValueError(f"max_question_chars must be >= 1, got {self.max_question_chars!r}")
        object.__setattr__(self, "task", normalize_task(self.task))
        check_layout(self.demonstrations)

    def question(self, question: str) -> str:
        """``question`` as the prompts ask it for the task (the ``yesno``/``fact`` suffix)."""
        return task_question(question, self.task)


def baseline_driver(
    method: str,
    llm: BaseChatModel,
    settings: BaselineSettings,
    *,
    retriever: BaseRetriever | None = None,
    reader: Reader | None = None,
    **fresh: Any,
) -> StepDriver:
    """The driver of baseline ``method``: its LLM, retriever and reader, its settings, a run's start.

    A new run starts with an empty ``answer``, ``final_content``, ``passages`` and ``warnings``,
    and with ``fresh``: the method's own channels (Self-Ask's ``messages``, IRCoT's
    ``paragraphs``, ...); the driver adds the validated question, ``rounds`` = 0 and an empty
    ``usage``.

    Raises:
        TypeError: ``llm`` is not a LangChain chat model, ``retriever`` not a LangChain retriever, or
            ``reader`` has no ``read`` method.
    """
    start = {"answer": "", "final_content": "", "passages": [], "warnings": [], **fresh}
    return StepDriver(
        method, llm, retriever=retriever, reader=reader, settings=settings, fresh=start, state_schema=MethodState
    )


def finish(content: str, warnings: Sequence[str], task: str) -> dict[str, Any]:
    """A run's last update: ``final_content``, the task-aware ``answer`` and the ``warnings``.

    ``warnings`` gets "the LLM stated no answer" when ``content`` states none.
    """
    content = content.strip()
    out = list(warnings)
    bounded = bounded_output(content, final_answer(content, task), out, no_answer="the LLM stated no answer")
    return {**bounded, "warnings": out}


CUT_BEFORE_ANSWER = "the reply was cut by the token budget before it stated an answer"
"""The warning of a one-prompt reply that the budget ended before "the answer is": its answer is a guess
from its first line (the 1.5B's Chain-of-Thought that enumerates "several factors: 1. ..." ends so)."""


def one_shot(render: Callable[[MethodState, BaselineSettings], str]) -> StepFunction:
    """A step that sends one prompt, ``render(state, settings)``, and finishes the run with the reply.

    CoT's, direct prompting's and Direct Retrieval's answer step; the call's ``searchain_step`` is
    the node's name. A reply cut by the token budget before it stated an answer gets the warning
    :data:`CUT_BEFORE_ANSWER`.
    """

    def body(state: MethodState, settings: BaselineSettings) -> StepBody:
        text = yield Generate.prompt(render(state, settings))
        warnings = list(state["warnings"])
        if not text.strip():
            warnings.append("the LLM returned empty output")
        elif getattr(text, "truncated", False) and not states_answer(text):
            warnings.append(f"{CUT_BEFORE_ANSWER}; its first line was taken as the answer")
        return finish(text, warnings, settings.task)

    return body


def sampling_options(llm: BaseChatModel, temperature: float, index: int) -> dict[str, Any]:
    """Call options of sampled path ``index``: the temperature, and ``seed`` = ``index`` where the model takes one."""
    options: dict[str, Any] = {"temperature": temperature}
    if "seed" in getattr(type(llm), "model_fields", {}) or getattr(llm, "_llm_type", "") == "transformers-chat":
        options["seed"] = index
    return options


def blocking_node(driver: StepDriver, name: str, body: StepFunction, **flags: Any) -> Step:
    """``driver.node(name, body, **flags)`` for a body that blocks (it runs a whole program).

    The step calls no model through the driver: it runs LangChain's agent or a DSPy program itself
    and returns their cost as its ``usage``. Its async path runs the sync one in a worker thread,
    with this context (traces, runtime), so that ``ainvoke`` never blocks the event loop.
    """
    node = driver.node(name, body, **flags)

    async def arun(state: Any, runtime: Runtime[Any]) -> Any:
        return await run_in_executor(None, node.func, state, runtime)

    return Step(name, node.func, arun)


# -- the graph ---------------------------------------------------------------------------------------


def graph_builder() -> StateGraph[MethodState, None, InputState, MethodOutput]:
    """A baseline's graph builder: state :class:`MethodState`, input ``{"question"}``, output :class:`MethodOutput`."""
    return StateGraph(MethodState, input_schema=InputState, output_schema=MethodOutput)


def compile_graph(
    builder: StateGraph[MethodState, None, InputState, MethodOutput],
    checkpointer: BaseCheckpointSaver[Any] | bool | None,
    name: str,
) -> BaselineGraph:
    """``builder`` compiled with ``checkpointer``; ``name`` is the graph's run name in traces."""
    return builder.compile(checkpointer=checkpointer, name=name)


def one_node_graph(
    driver: StepDriver,
    step: str,
    body: StepFunction,
    *,
    retry_policy: RetryPolicy | None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None,
    name: str,
) -> BaselineGraph:
    """A graph of one step, ``step``, that starts the run and is its one round (``rounds`` = 1).

    CoT, direct prompting, SearChain w/o IR, Self-Ask w/o IR, CoT-SC and Recite-and-Answer.
    """
    builder = graph_builder()
    builder.add_node(step, driver.node(step, body, starts_run=True, opens_round=True), retry_policy=retry_policy)
    builder.add_edge(START, step)
    builder.add_edge(step, END)
    return compile_graph(builder, checkpointer, name)
