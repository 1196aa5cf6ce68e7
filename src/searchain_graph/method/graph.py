r"""SearChain as a LangGraph state machine (Section 3 and Algorithm 1 of the paper).

The graph has four nodes, one per step of a round (:mod:`searchain_graph.method.nodes`)::

    START -> coq_generation -> ir_check -> feedback -> coq_generation -> ... -> tracing -> END
                                        \\-------------------------------------> tracing

``ir_check`` goes to ``feedback`` when IR corrected or completed a node and rounds remain, else
to ``tracing``. Each node is one run in a LangSmith trace, named after its step, with
``searchain_round`` in its metadata; the LLM, retriever, reader and per-node verdict runs inside
it carry the same.
"""

from __future__ import annotations

import logging
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.cache.base import BaseCache
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from searchain_graph.ir.readers.base import Reader, reader_traits
from searchain_graph.ir.readers.calibration import load_calibration
from searchain_graph.llms.servers import is_transient
from searchain_graph.method.context import DEFAULT_THRESHOLD, SearChainContext, SearChainSettings
from searchain_graph.method.driver import StepDriver
from searchain_graph.method.nodes import CONTINUES_AFTER, FRESH_RUN, SearChainSteps
from searchain_graph.method.state import InputState, OutputState, SearChainState
from searchain_graph.method.threads import OnBusy, SearChainGraph
from searchain_graph.method.verdict import QueryMatcher, normalized_duplicate

logger = logging.getLogger(__name__)


def resolve_threshold(reader: Reader, confidence_threshold: float | None = None) -> tuple[float, str]:
    """θ for a graph and where it came from: ``(θ, source)``.

    In order: ``confidence_threshold`` when given (source ``"argument"``); the θ saved for this
    reader by ``searchain calibrate`` (``"calibration:<file>"``, see
    :mod:`searchain_graph.ir.readers.calibration`); the reader's ``default_threshold``
    (source: the reader's ``threshold_source`` when it has one, e.g. the bundled reader's
    shipped calibration, else ``"reader default"``);
    :data:`~searchain_graph.method.verdict.DEFAULT_THRESHOLD`, the paper's 1.5
    (``"paper default"``).
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


def reader_settings(
    reader: Reader,
    *,
    confidence_threshold: float | None = None,
    verify_yes_no: bool | None = None,
    **fields: Any,
) -> tuple[SearChainSettings, str]:
    """The settings of a graph on ``reader``, and where θ came from: the one place reader defaults resolve.

    θ as :func:`resolve_threshold` finds it; ``verify_yes_no`` defaults to the reader's
    ``answers_yes_no`` (False for the shipped readers, whose *g* is words of the passage and never
    a yes or no; True for readers that do not say). ``create_searchain_graph``, the oracle-chain
    benchmark and the calibration all call this, so one node gets one verdict everywhere.

    Raises:
        ValueError: a field is out of range (the message names it).
    """
    theta, source = resolve_threshold(reader, confidence_threshold)
    if verify_yes_no is None:
        verify_yes_no = reader_traits(reader).answers_yes_no
    return SearChainSettings(confidence_threshold=theta, verify_yes_no=verify_yes_no, **fields), source


def duplicate_rule(rule: QueryMatcher | str | None) -> QueryMatcher:
    """``DuplicateQuery`` from a matcher, or a built-in rule's name (``"text"``, ``"meaning"``).

    Raises:
        ValueError: ``rule`` is a string that names no rule.
    """
    if rule is None or rule == "text":
        return normalized_duplicate
    if rule == "meaning":
        from searchain_graph.ir.query_similarity import shared_semantic_duplicate

        return shared_semantic_duplicate()
    if isinstance(rule, str) or not callable(rule):
        raise ValueError(f"is_duplicate must be a callable, 'text' or 'meaning', got {rule!r}")
    return rule


DEFAULT_RETRY_POLICY = RetryPolicy(
    max_attempts=3, initial_interval=0.25, backoff_factor=2.0, max_interval=8.0, retry_on=is_transient
)
"""The steps that call the LLM, the retriever or the reader try 3 times, 0.25 s then 0.5 s apart
(with jitter), on transient errors only (:func:`~searchain_graph.llms.servers.is_transient`):
LangGraph's ``default_retry_on`` retries connection errors, timeouts and HTTP 5xx, and never
``ValueError``, ``TypeError``, ``KeyError`` and other programming errors, which would only fail
again; nor an OpenAI-style server's 4xx but 408, 409 and 429."""


def create_searchain_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    reader: Reader,
    *,
    max_rounds: int = 5,
    confidence_threshold: float | None = None,
    rouge_threshold: float = 0.35,
    task: str = "multihop",
    verification: bool = True,
    completion: bool = True,
    verify_yes_no: bool | None = None,
    is_duplicate: QueryMatcher | Literal["text", "meaning"] | None = None,
    demonstrations: str = "instruction",
    continuation: str = "fresh",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = DEFAULT_RETRY_POLICY,
    step_timeout: float | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    on_busy: OnBusy = "reject",
    name: str = "searchain",
    review: bool = False,
    cache: BaseCache[Any] | None = None,
) -> SearChainGraph:
    """Build SearChain (Search-in-the-Chain, Xu et al. WWW 2024) as a compiled LangGraph graph.

    The result is a LangChain Runnable: ``invoke``, ``ainvoke``, ``batch``, ``stream`` (each
    round shows in ``stream_mode="updates"``) and use as a node of a larger graph all work.

    Args:
        llm: Any LangChain chat model; it writes the Chain-of-Query and the traced answer.
        retriever: Any LangChain retriever; its first document is the top-1 passage ``d_i``.
        reader: Extracts ``g`` and ``f`` from a passage (``read(query, Passage)``, optionally
            ``read_batch``; see :mod:`searchain_graph.ir.readers.base`).
        max_rounds: Most LLM-IR interaction rounds (the paper's ``r_max`` = 5).
        confidence_threshold: θ: IR corrects an answer only when ``f > θ``. Resolved in order
            (:func:`resolve_threshold`): this argument; else the θ saved for this reader by
            ``searchain calibrate`` (found by the reader's ``calibration_key`` under
            ``$SEARCHAIN_CACHE/calibration``, then among the calibrations shipped with the
            package, such as the default ``LLMReader``'s); else the reader's
            ``default_threshold`` (the bundled reader's calibrated θ; 1.5 for the others: the
            paper's value for the DPR reader's relevance logit, and p > 0.82 on the log-odds
            scale of ``LLMReader`` and ``ExtractiveQAReader``; see ``docs/method.md``); else 1.5.
            A per-run ``SearChainContext(confidence_threshold=...)`` overrides all of them. The θ
            chosen and its source are logged (INFO) and put in the graph's run metadata as
            ``searchain_threshold`` and ``searchain_threshold_source``.
        rouge_threshold: α: for ``task="longform"`` an answer is inconsistent with its passage
            when ROUGE-L < α (0.35 in the paper).
        task: ``multihop``, ``yesno`` (StrategyQA), ``fact`` (FEVER), ``longform`` (ELI5) or
            ``slot_filling`` (zsRE/T-REx); it selects the paper's CoQ prompt.
        verification: Set False for the paper's "w/o Verification" ablation.
        completion: Set False for the paper's "w/o Completion" ablation.
        verify_yes_no: Whether verification also checks yes/no answers. ``None`` (default): the
            reader's ``answers_yes_no`` (False for the shipped readers, whose *g* is words of the
            passage and never a yes or no; True for readers that do not say).
        is_duplicate: ``DuplicateQuery`` of Algorithm 1, ``(query, processed) -> bool``, or a
            built-in rule by name: ``"text"`` (the default) takes a query for a duplicate when it
            equals a processed one after normalisation; ``"meaning"`` when it means the same
            (:class:`~searchain_graph.ir.query_similarity.SemanticDuplicate`: all-MiniLM-L6-v2,
            cosine >= 0.85, calibrated on MuSiQue; needs the encoder's PyPI data package).
        demonstrations: Where the prompts' worked examples go: ``"instruction"`` (the paper's
            layout: inside the one user message) or ``"turns"`` (the same words as earlier turns
            of the chat, which a small model copies less; see ``docs/method.md``).
        continuation: How a later round's reply begins: ``"fresh"`` (the paper's: the LLM replies to
            the feedback from nothing) or ``"path"`` (the reply is begun with the verified
            ``[Query i]``/``[Answer i]`` pairs, the node IR changed last with IR's answer, and the
            LLM continues it; needs a chat model that continues a final assistant message, as the
            local models do). See :data:`~searchain_graph.method.context.CONTINUATIONS`.
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM, retriever or reader
            (:data:`DEFAULT_RETRY_POLICY`: transient errors retried twice with backoff; None: no
            retries). An error that is not retried, or fails every try, carries a note naming
            the step and the round.
        step_timeout: Seconds a step may take before the run fails with ``TimeoutError``
            (a hung LLM endpoint, retriever or reader); None waits for ever. The async path
            (``ainvoke``, ``astream``: what ``searchain serve`` runs) fails on time; a sync
            ``invoke`` raises only once the hung call returns, since a thread cannot be
            stopped. Set the LLM client's own ``timeout`` as well.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        on_busy: A run started on a checkpointer thread that another run of this process is
            using: ``"reject"`` raises :class:`~searchain_graph.method.threads.ThreadBusyError`,
            ``"wait"`` runs it when the other ends. Two runs never interleave one thread's
            checkpoints (:mod:`searchain_graph.method.threads`).
        name: The graph's run name in traces.
        review: Pause before IR overrules the LLM: each correction is an ``interrupt()`` whose
            payload is the node, the LLM's answer, *g*, *f* against θ and the passage
            (:func:`~searchain_graph.method.review.review_payload`); the run goes on with
            ``Command(resume="accept" | "reject" | {"decision": "edit", "answer": ...})``, and
            the tree records the decision (``decided_by="ir+person"``). Needs a checkpointer: yours,
            or the one LangGraph's server gives a graph it serves (``langgraph dev``).
        cache: A LangGraph cache (``InMemoryCache``, ``SqliteCache``, any ``BaseCache``), passed
            to ``compile``: each retrieval (keyed by the retriever, the query and ``k``) and each
            reading (keyed by the reader, the query and the passage) is then a task with a
            ``CachePolicy``, answered from the cache when seen before, also by other runs and
            graphs sharing it (:mod:`searchain_graph.method.ir_tasks`). ``usage`` counts the hits.
            None (the default): no tasks, no cache.

    Returns:
        The compiled graph (a :class:`~langgraph.graph.state.CompiledStateGraph`). Input
        ``{"question": str}``; output ``answer``, ``final_content``, ``references``, ``rounds``,
        ``tree``, ``usage`` and ``warnings``. Per-run overrides go
        in ``context=SearChainContext(...)``.

    Example:
        >>> graph = create_searchain_graph(llm, retriever, LLMReader(llm))  # doctest: +SKIP
        >>> out = graph.invoke({"question": "Where was the performer of Spirit If... born?"})  # doctest: +SKIP
        >>> out["final_content"]  # doctest: +SKIP
        'The performer of Spirit If... is Kevin Drew [1]. Kevin Drew was born in Toronto [2]. ...'
    """
    if not isinstance(llm, BaseChatModel):
        raise TypeError(f"llm must be a LangChain BaseChatModel, got {type(llm).__name__}")
    if not isinstance(retriever, BaseRetriever):
        raise TypeError(f"retriever must be a LangChain BaseRetriever, got {type(retriever).__name__}")
    if not callable(getattr(reader, "read", None)):
        raise TypeError(f"reader must have a read(query, passage) method, got {type(reader).__name__}")
    defaults, source = reader_settings(
        reader,
        confidence_threshold=confidence_threshold,
        verify_yes_no=verify_yes_no,
        max_rounds=max_rounds,
        rouge_threshold=rouge_threshold,
        task=task,
        verification=verification,
        completion=completion,
        max_question_chars=max_question_chars,
        demonstrations=demonstrations,
        continuation=continuation,
    )
    confidence_threshold = defaults.confidence_threshold
    logger.info("SearChain θ = %g (%s)", confidence_threshold, source)

    def settings(runtime: Runtime[SearChainContext] | None) -> SearChainSettings:
        ctx = runtime.context if runtime is not None else None
        if ctx is None:
            return defaults
        if not isinstance(ctx, SearChainContext):
            raise TypeError(f"context must be a SearChainContext, got {type(ctx).__name__}")
        return ctx.resolve(defaults)

    if review and checkpointer is False:
        raise ValueError("review=True pauses runs for a person, which needs a checkpointer (checkpointer=False)")
    steps = SearChainSteps(duplicate_rule(is_duplicate), review=review)
    driver = StepDriver(
        "searchain",
        llm,
        retriever=retriever,
        reader=reader,
        settings=settings,
        fresh=FRESH_RUN,
        state_schema=SearChainState,
        title="SearChain",
        cache_ir=cache is not None,
    )
    builder = StateGraph(
        SearChainState, context_schema=SearChainContext, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node(
        "coq_generation",
        driver.node(
            "coq_generation", steps.coq_generation, starts_run=True, continues_after=CONTINUES_AFTER, opens_round=True
        ),
        retry_policy=retry_policy,
        metadata={"searchain_step": "coq_generation"},
    )
    builder.add_node(
        "ir_check",
        driver.node("ir_check", steps.ir_check),
        destinations=("feedback", "tracing"),
        retry_policy=retry_policy,
        metadata={"searchain_step": "ir_check"},
    )
    builder.add_node("feedback", driver.node("feedback", steps.feedback), metadata={"searchain_step": "feedback"})
    builder.add_node(
        "tracing",
        driver.node("tracing", steps.tracing),
        retry_policy=retry_policy,
        metadata={"searchain_step": "tracing"},
    )
    builder.add_edge(START, "coq_generation")
    builder.add_edge("coq_generation", "ir_check")
    builder.add_edge("feedback", "coq_generation")
    builder.add_edge("tracing", END)
    graph = SearChainGraph.from_compiled(
        builder.compile(checkpointer=checkpointer, cache=cache, name=name), on_busy=on_busy
    )
    graph.step_timeout = step_timeout
    return graph.with_config(
        metadata={"searchain_threshold": confidence_threshold, "searchain_threshold_source": source}
    )
