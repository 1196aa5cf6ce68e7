r"""SearChain as a LangGraph state machine: Algorithm 1 of the paper, node for node.

Algorithm 1 (Xu et al., WWW 2024), and the graph's nodes that run it::

    Main(Q):
      r = 1; CoQ = ChainGenerate(Q)                          coq_generation (opens round 1)
      loop:
        F = Traverse(CoQ)      # IR(q_i, a_i), node by node    ir_check
        if F is empty or r = r_max: break                    route_after_ir_check -> tracing
        r = r + 1; CoQ = ChainGenerate(Q, F); T.AddChild(CoQ)  feedback -> coq_generation (opens round r)
      return Tracing(T, R)                                   tracing

    START -> coq_generation -> ir_check --(feedback pending and r < r_max)--> feedback -> coq_generation
                                       \--(otherwise)--------------------------------> tracing -> END

With ``review=True``, ``ir_check`` stops at a correction and a ``review`` node pauses for a
person (``ir_check -> review -> ir_check``) before the loop test.

The steps themselves are in :mod:`searchain_graph.method.nodes`. Each is a generator that asks
for its LLM, retriever and reader calls and returns its state update; a
:class:`~searchain_graph.method.driver.StepDriver` performs each request, sync or async, and
sends the step its result:

==========================  ===================================================================
a step yields               and receives
==========================  ===================================================================
``Generate(messages)``      the reply's text (a ``str``; ``.truncated`` when the token budget cut it)
``Retrieve(queries)``       one list of documents per query (``{"page_content", "metadata"}``)
``Read(pairs)``             one ``ReaderOutput(answer=g, confidence=f)`` per (query, document)
==========================  ===================================================================

The driver also counts each call's cost in ``usage``, traces it under its step and round
(``searchain_step``, ``searchain_round`` in every run's metadata, so each round shows in
LangSmith), and starts a run afresh at ``coq_generation``. Where a step opens a round,
``opens_round=True`` says so below: ``rounds`` goes up by one there, and only there.

The settings are one :class:`~searchain_graph.method.context.Context` (LangGraph's
``context_schema``); the paper's rules as written are ``Context(preset="paper")``.
"""

from __future__ import annotations

import logging
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Literal

from langchain_core.caches import BaseCache as LLMCache
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.cache.base import BaseCache
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from searchain_graph.ir.readers.base import Reader, reader_traits
from searchain_graph.ir.readers.calibration import load_calibration
from searchain_graph.llms.call_cache import SQLiteLLMCache
from searchain_graph.llms.extras import require
from searchain_graph.llms.servers import is_transient
from searchain_graph.method.calls import label_node_run
from searchain_graph.method.context import DEFAULT_THRESHOLD, Context, required
from searchain_graph.method.driver import StepDriver, check_llm, check_retriever, innermost
from searchain_graph.method.nodes import FRESH_RUN, SearChainSteps
from searchain_graph.method.review import ask_for_review, check_review_resume
from searchain_graph.method.state import InputState, OutputState, SearChainState
from searchain_graph.method.threads import OnBusy, SearChainGraph
from searchain_graph.method.verdict import QueryMatcher

logger = logging.getLogger(__name__)

CONTEXT_FIELDS = frozenset(f.name for f in fields(Context))
"""The names ``config["configurable"]`` may set (LangGraph servers copy them into the run's context)."""

__all__ = [
    "DEFAULT_RETRY_POLICY",
    "create_searchain_graph",
    "reader_settings",
    "resolve_threshold",
    "route_after_ir_check",
]


def route_after_ir_check(state: SearChainState, max_rounds: int) -> Literal["review", "feedback", "tracing"]:
    """Algorithm 1's loop test: feed back while IR changed a node and rounds remain, else trace.

    ``state["feedback"]`` is the node IR corrected or completed this round (``None``: every node
    passed); ``state["rounds"]`` is the round just checked; ``max_rounds`` is the paper's r_max.
    Under review (``review=True``), a correction waiting for a person (``review_pending``) goes to
    the ``review`` node first.
    """
    if state.get("review_pending"):
        return "review"
    if state.get("feedback") is not None and state["rounds"] < max_rounds:
        return "feedback"
    return "tracing"


def configured_fields() -> dict[str, Any]:
    """The ``Context`` fields in the running config's ``configurable`` (empty outside a run)."""
    try:
        configurable = get_config().get("configurable") or {}
    except RuntimeError:  # not inside a runnable
        return {}
    return {name: value for name, value in configurable.items() if name in CONTEXT_FIELDS}


def resolve_threshold(reader: Reader, confidence_threshold: float | None = None) -> tuple[float, str]:
    """θ for a graph and where it came from: ``(θ, source)``.

    In order: ``confidence_threshold`` when given (source ``"argument"``); the θ saved for this
    reader by ``searchain calibrate`` (``"calibration:<file>"``, see
    :mod:`searchain_graph.ir.readers.calibration`); the reader's ``default_threshold``
    (source: the reader's ``threshold_source`` when it has one, e.g. the bundled reader's
    shipped calibration, else ``"reader default"``); the paper's 1.5 (``"paper default"``).
    """
    if confidence_threshold is not None:
        return float(confidence_threshold), "argument"
    saved = load_calibration(reader)
    if saved is not None:
        return float(saved["threshold"]), f"calibration:{saved['path']}"
    traits = reader_traits(reader)
    if traits.default_threshold is not None:
        return traits.default_threshold, traits.threshold_source or "reader default"
    return DEFAULT_THRESHOLD, "paper default"


def continues_begun_reply(llm: Any) -> bool:
    """Whether the chat model (inside any wrapper) continues a final assistant message as its reply begun.

    The local models do (``continues_final_message``); an OpenAI-compatible server answers it with a
    new turn, so the tuned preset's later rounds start afresh there.
    """
    return bool(getattr(innermost(llm), "continues_final_message", False))


def reader_settings(
    reader: Reader, context: Context | None = None, *, continues: bool = False, **fields: Any
) -> tuple[Context, str]:
    """``context`` (with ``fields`` changed) resolved for ``reader``, and where θ came from.

    Every field left empty is filled: the adaptations from the preset, θ as
    :func:`resolve_threshold` finds it, ``verify_yes_no`` from the reader's ``answers_yes_no``
    under the tuned preset, ``continuation`` from ``continues`` (whether the chat model continues a
    reply begun for it). ``create_searchain_graph``, the oracle-chain benchmark and the
    calibration all call this, so one node gets one verdict everywhere.

    Raises:
        ValueError: a field is out of range (the message names it).
    """
    context = replace(context or Context(), **fields)
    theta, source = resolve_threshold(reader, context.confidence_threshold)
    yes_no = reader_traits(reader).answers_yes_no
    return context.resolved(threshold=theta, reader_yes_no=yes_no, continues=continues), source


DEFAULT_RETRY_POLICY = RetryPolicy(
    max_attempts=3, initial_interval=0.25, backoff_factor=2.0, max_interval=8.0, retry_on=is_transient
)
"""The steps that call the LLM, the retriever or the reader try 3 times, 0.25 s then 0.5 s apart
(with jitter), on transient errors only (:func:`~searchain_graph.llms.servers.is_transient`):
connection errors, timeouts, HTTP 5xx, and an OpenAI-style server's 408, 409 and 429; never
``ValueError``, ``TypeError`` or other programming errors, which would only fail again."""


def create_searchain_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    reader: Reader,
    context: Context | None = None,
    *,
    is_duplicate: QueryMatcher | None = None,
    review: bool = False,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    cache: BaseCache[Any] | None = None,
    llm_cache: LLMCache | str | Path | None = None,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    step_timeout: float | None = None,
    on_busy: OnBusy = "reject",
    name: str = "searchain",
    **settings: Any,
) -> SearChainGraph:
    """Build SearChain (Search-in-the-Chain, Xu et al. WWW 2024) as a compiled LangGraph graph.

    The result is a LangChain Runnable: ``invoke``, ``ainvoke``, ``batch``, ``stream`` (each
    round shows in ``stream_mode="updates"``) and use as a node of a larger graph all work.

    Args:
        llm: Any LangChain chat model; it writes the Chain-of-Query and the traced answer.
        retriever: Any LangChain retriever; its first document is the top-1 passage ``d_i``.
        reader: Extracts ``g`` and ``f`` from a passage (``read(query, Passage)``, optionally
            ``read_batch``; see :mod:`searchain_graph.ir.readers.base`).
        context: The settings (:class:`~searchain_graph.method.context.Context`, where each is
            described); a run's own ``context=`` changes the fields it sets. The θ chosen and its
            source are logged and put in the run metadata (``searchain_threshold``,
            ``searchain_threshold_source``).
        is_duplicate: A ``DuplicateQuery(query, processed) -> bool`` of your own, instead of
            ``Context.duplicates``.
        review: Pause before IR overrules the LLM: each correction is an ``interrupt()`` whose
            payload is the node, the LLM's answer, *g*, *f* against θ and the passage
            (:func:`~searchain_graph.method.review.review_payload`); the run goes on with
            ``Command(resume="accept" | "reject" | {"decision": "edit", "answer": ...})``, and
            the tree records the decision. A decision may name its correction (``"id"``, or
            ``"round"`` and ``"node"``); one naming another, or one that is no decision, raises
            ``ValueError`` and is not recorded. The pause is a node of its own (``review``):
            deciding redoes no retrieval and no reading. Needs a checkpointer: yours, or
            ``checkpointer=True`` where a parent graph or a LangGraph server supplies one.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        cache: A LangGraph cache passed to ``compile``: each retrieval and reading is then a
            task with a ``CachePolicy``, answered from the cache when seen before
            (:mod:`searchain_graph.method.ir_tasks`); ``usage`` counts the hits.
        llm_cache: LangChain's LLM cache (any ``langchain_core.caches.BaseCache``), or the path of a
            SQLite file for :class:`~searchain_graph.llms.call_cache.SQLiteLLMCache`: the graph's LLM
            calls are answered from it when made before with the same messages, model and settings
            (the graph uses a copy of ``llm`` with ``cache=`` set; ``usage["llm_cache_hits"]`` counts
            the hits). None (the default): the model's own ``cache`` setting, or LangChain's global cache.
        retry_policy: For the nodes that call the LLM, retriever or reader
            (:data:`DEFAULT_RETRY_POLICY`; None: no retries).
        step_timeout: Seconds a step may take before the run fails with ``TimeoutError``; None
            waits for ever. The async path fails on time; a sync ``invoke`` raises once the hung
            call returns, since a thread cannot be stopped.
        on_busy: A run started on a checkpointer thread another run of this process is using:
            ``"reject"`` raises :class:`~searchain_graph.method.threads.ThreadBusyError`,
            ``"wait"`` runs it when the other ends.
        name: The graph's run name in traces.
        **settings: Fields of :class:`~searchain_graph.method.context.Context`, over ``context``
            (``max_rounds=3``).

    Returns:
        The compiled graph. Input ``{"question": str}``; output ``answer``, ``final_content``,
        ``references``, ``rounds``, ``tree``, ``usage`` and ``warnings``.

    Raises:
        TypeError: a component is of the wrong kind, or ``settings`` names no field of ``Context``.
        ValueError: a setting is out of range, or ``review=True`` without a checkpointer.

    Example:
        >>> graph = create_searchain_graph(llm, retriever, reader, Context(preset="paper"))  # doctest: +SKIP
        >>> graph.invoke({"question": "Where was the performer of Spirit If... born?"})["answer"]  # doctest: +SKIP
        'Toronto'
    """
    check_llm(llm)
    check_retriever(retriever)
    if not callable(getattr(reader, "read", None)):
        raise TypeError(f"reader must have a read(query, passage) method, got {type(reader).__name__}")
    if context is not None and not isinstance(context, Context):
        raise TypeError(f"context must be a Context, got {type(context).__name__}")
    if review and (checkpointer is None or checkpointer is False):
        raise ValueError(
            "review=True pauses runs for a person, which needs a checkpointer to resume them: pass "
            "checkpointer=InMemorySaver() (or a database's saver), or checkpointer=True where a parent "
            "graph or a server (langgraph dev) supplies one"
        )
    if llm_cache is not None:
        if isinstance(llm_cache, (str, Path)):
            llm_cache = SQLiteLLMCache(llm_cache)
        if not isinstance(llm_cache, LLMCache):
            got = type(llm_cache).__name__
            raise TypeError(f"llm_cache must be a langchain_core BaseCache or a file path, got {got}")
        if not isinstance(llm, BaseChatModel):
            raise TypeError(
                f"llm_cache= sets the cache of a chat model, and llm is a {type(llm).__name__}: set cache= on the "
                "chat model inside it (ChatOpenAI(cache=...)), or langchain_core.globals.set_llm_cache"
            )
        llm = llm.model_copy(update={"cache": llm_cache})
    graph_context = replace(context or Context(), **settings)
    continues = continues_begun_reply(llm)
    defaults, source = reader_settings(reader, graph_context, continues=continues)
    if is_duplicate is None and defaults.duplicates == "meaning":  # said now, not in round 2
        require(
            ("torch", "transformers"),
            "duplicates='meaning' (the tuned preset's duplicate check, by all-MiniLM-L6-v2)",
            "or pass duplicates='text'",
        )
    theta = required(defaults.confidence_threshold, "confidence_threshold")
    yes_no = reader_traits(reader).answers_yes_no
    logger.info("SearChain θ = %g (%s)", theta, source)

    def run_settings(runtime: Runtime[Context] | None) -> Context:
        """The run's settings: its own context over the graph's.

        The run's context is ``context=`` (a ``Context`` or a dict of its fields) over the
        ``Context`` fields in ``config["configurable"]`` (as LangGraph servers pass them).
        """
        ctx = runtime.context if runtime is not None else None
        configured = configured_fields()
        if ctx is None and not configured:
            return defaults
        if ctx is not None and not isinstance(ctx, (dict, Context)):
            raise TypeError(f"context must be a Context, got {type(ctx).__name__}")
        given = ctx if isinstance(ctx, dict) else {n: getattr(ctx, n) for n in ctx.given} if ctx else {}
        return (
            Context(**{**configured, **given})
            .over(graph_context)
            .resolved(threshold=theta, reader_yes_no=yes_no, continues=continues)
        )

    def feedback_or_tracing(
        state: SearChainState, runtime: Runtime[Context]
    ) -> Literal["review", "feedback", "tracing"]:
        label_node_run("ir_check", state["rounds"])  # the router's run in a trace carries its round
        return route_after_ir_check(state, run_settings(runtime).max_rounds)

    steps = SearChainSteps(is_duplicate, review=review)
    run = StepDriver(
        "searchain",
        llm,
        retriever=retriever,
        reader=reader,
        settings=run_settings,
        fresh=FRESH_RUN,
        state_schema=SearChainState,
        title="SearChain",
        cache_ir=cache is not None,
    ).node
    builder = StateGraph(SearChainState, context_schema=Context, input_schema=InputState, output_schema=OutputState)
    # ChainGenerate(Q, F): a new run starts here, and a round opens (r = r + 1) each time.
    builder.add_node(
        "coq_generation",
        run("coq_generation", steps.coq_generation, starts_run=True, continues_after=("feedback",), opens_round=True),
        metadata={"searchain_step": "coq_generation"},
        retry_policy=retry_policy,
    )
    # Traverse(CoQ): IR(q_i, a_i) for each node, until the first correction or completion.
    builder.add_node(
        "ir_check", run("ir_check", steps.ir_check), metadata={"searchain_step": "ir_check"}, retry_policy=retry_policy
    )
    # PromptForVerify / PromptForComplete: F into the conversation.
    builder.add_node("feedback", run("feedback", steps.feedback), metadata={"searchain_step": "feedback"})
    # Tracing(T, R): the final content, each step citing its passage.
    builder.add_node(
        "tracing", run("tracing", steps.tracing), metadata={"searchain_step": "tracing"}, retry_policy=retry_policy
    )

    builder.add_edge(START, "coq_generation")
    builder.add_edge("coq_generation", "ir_check")
    if review:
        # A person decides the correction IR stopped at; IR's check goes on from its stored results.
        builder.add_node("review", ask_for_review, metadata={"searchain_step": "review"})
        builder.add_edge("review", "ir_check")
    builder.add_conditional_edges(
        "ir_check", feedback_or_tracing, ["review", "feedback", "tracing"] if review else ["feedback", "tracing"]
    )
    builder.add_edge("feedback", "coq_generation")
    builder.add_edge("tracing", END)

    graph = SearChainGraph.from_compiled(
        builder.compile(checkpointer=checkpointer, cache=cache, name=name),
        on_busy=on_busy,
        check_resume=check_review_resume if review else None,
    )
    graph.step_timeout = step_timeout
    return graph.with_config(metadata={"searchain_threshold": theta, "searchain_threshold_source": source})
