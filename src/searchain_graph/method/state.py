"""Graph state for SearChain: the input, the output and the working state.

Everything stored here is a plain ``dict``/``list``/``str``/number, so that the
state is msgpack-serialisable and every LangGraph checkpointer can persist it.
The names follow Algorithm 1 of the paper (Xu et al., WWW 2024): ``processed``
is the set *M* of processed queries, ``references`` is the correct reasoning path *R*,
``feedback`` is *F* and ``tree`` is the Tree-of-Reasoning *T*.

What accumulates over a run (*M*, *R*, *T*, the conversation, the warnings, the cost counters and
the IR results) is kept by reducers, so that each node returns only what it adds: a round's new
branch, the nodes IR checked, one LLM call's cost. The step driver
(:class:`~searchain_graph.method.driver.StepDriver`) starts a run afresh at the entry step
(LangGraph's ``Overwrite`` bypasses the reducers), so a second question on a checkpointed thread
does not inherit the first one's path.

Who writes each channel (each is written by one step; the driver writes ``rounds`` and
``last_step`` for every method):

* ``coq_generation``: ``question`` (validated, at a run's start), ``rounds`` (once per round),
  ``messages`` (the LLM's reply), ``chain`` and a new branch of ``tree``;
* ``ir_check``: ``processed`` (*M*), ``references`` (*R*), ``ir_cache``, ``feedback`` (*F*, or
  ``None`` when every node passed) and the round's ``checks`` on its branch of ``tree``: one
  record per node of the chain, each with its verdict and the reason, duplicates and the nodes
  IR did not reach included;
* ``review`` (graphs built with ``review=True``): ``reviews``, a person's decision on the
  correction ``ir_check`` paused at (``review_pending``, which ``ir_check`` writes and ``review``
  clears);
* ``feedback``: ``messages`` (the rendered correction or completion prompt);
* ``tracing``: ``final_content`` and ``answer``;
* every step: ``usage`` (its calls' cost) and ``warnings``.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, cast

from typing_extensions import TypedDict

NodeSource = Literal["llm", "corrected", "completed"]
"""Where the answer of a node on the correct path comes from (the paper's Table 2)."""


class DocumentDict(TypedDict):
    """A retrieved passage, as a plain dict (a LangChain ``Document`` without the class)."""

    page_content: str
    metadata: dict[str, object]


class ChainNode(TypedDict):
    """One node ``(q_i, a_i)`` of a Chain-of-Query, as parsed from the LLM's output."""

    index: int
    """1-based position of the node in its chain."""
    query: str
    """The IR-oriented query ``q_i``."""
    answer: str | None
    """The LLM's answer ``a_i``; ``None`` when the LLM gave none."""
    unsolved: bool
    """True for an ``[Unsolved Query]``: the LLM lacks the knowledge (completion applies)."""


class Reference(TypedDict):
    """One node of the correct reasoning path *R*, cited as ``[index]`` in the final content."""

    index: int
    """The citation number ``n`` of ``[n]`` in ``final_content`` (1-based, in path order)."""
    query: str
    answer: str
    """The answer kept on the path: the LLM's, or the reader's ``g`` after IR feedback."""
    source: NodeSource
    document: DocumentDict | None
    """The top-1 supporting passage; ``None`` only when the retriever returned nothing."""
    confidence: float | None
    """The reader's confidence ``f`` for this node (``None`` without a passage)."""
    reader_answer: str
    """The reader's extracted answer ``g`` (kept even when the LLM's answer passed)."""
    round: int
    """The interaction round in which IR checked this node."""


class Feedback(TypedDict):
    """IR's feedback *F* to the LLM: a correction (verification) or a completion."""

    kind: Literal["correction", "completion"]
    node: int
    """Index of the node in the chain that triggered the feedback."""
    query: str
    answer: str
    """The reader's answer ``g`` that the LLM is told to use."""
    passage: str
    """The passage IR read, as the feedback prompt shows it (title and text)."""
    confidence: float
    """The reader's confidence ``f``."""


class Check(TypedDict, total=False):
    """The decision IR took on one node of a round's chain (``Branch.checks``), recorded once.

    Every node of a checked branch has one. ``action`` is an IR verdict of
    :func:`~searchain_graph.method.verdict.ir_verdict` (``pass``, ``correction``,
    ``completion``, ``no_passage``, ``unsolved_kept``), or ``duplicate`` (``DuplicateQuery``:
    the query was asked before, see ``duplicate_of``), or ``not_reached`` (IR stopped at an
    earlier node of the round).
    """

    node: int
    query: str
    action: str
    reason: str
    """Why, in a few words."""
    reader_answer: str
    """*g* (checked nodes)."""
    confidence: float | None
    """*f* (checked nodes)."""
    threshold: float
    """θ the node was judged with (checked nodes)."""
    passage: dict[str, str]
    """The passage read: ``title``, ``id``, ``snippet``."""
    rouge_l: float
    unverifiable: bool
    duplicate_of: dict[str, object]
    """``{"round", "node", "query"}``: the earlier node that asked it (duplicates)."""
    decided_by: str
    """``"ir+person"``: a correction a person reviewed (``review=True``); absent, IR decided alone."""
    review: dict[str, str]
    """The person's decision on the correction: ``{"decision": "accept"|"reject"|"edit", "answer"?}``."""


class Branch(TypedDict):
    """One Chain-of-Query generated in one round: a branch of the Tree-of-Reasoning."""

    round: int
    parent: dict[str, object] | None
    """Where this branch restarted from: ``None`` for the root (the question), else
    ``{"round": r, "node": i, "query": q, "kind": "correction" | "completion"}``."""
    nodes: list[ChainNode]
    final_content: str | None
    raw: str
    """The LLM's raw text for this branch (with ``begun`` at its start, when the method began it)."""
    begun: NotRequired[str]
    """What the method wrote at the start of this branch's reply for the LLM to continue
    (``continuation="path"``: the verified pairs); absent when the LLM wrote all of ``raw``."""
    checks: list[Check]
    """IR's decision on each node of this branch (empty until ``ir_check`` has run)."""


class Usage(TypedDict):
    """Cost counters for one question (compare with the paper's Table 5).

    ``retrieval_calls`` and ``reader_calls`` count what the method asked for; the ``*_cache_hits``
    say how many of those a graph compiled with a cache answered without calling the retriever
    or the reader (:mod:`searchain_graph.method.ir_tasks`), and ``llm_cache_hits`` how many LLM
    calls an LLM cache answered (:mod:`searchain_graph.llms.call_cache`). Tokens and words count every
    call asked for, answered from a cache or not, so Table 5 compares the same thing either way.
    """

    llm_calls: int
    words_in: int
    words_out: int
    input_tokens: int
    output_tokens: int
    retrieval_calls: int
    reader_calls: int
    retrieval_cache_hits: int
    reader_cache_hits: int
    llm_cache_hits: int


def empty_usage() -> Usage:
    """Zero counts for every :class:`Usage` field."""
    return {
        "llm_calls": 0,
        "words_in": 0,
        "words_out": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "retrieval_calls": 0,
        "reader_calls": 0,
        "retrieval_cache_hits": 0,
        "reader_cache_hits": 0,
        "llm_cache_hits": 0,
    }


def add_usage(total: Mapping[str, Any] | None, more: Mapping[str, Any] | None) -> Usage:
    """Reducer of ``usage``: counts add up field by field (a node returns only its own calls)."""
    out = empty_usage()
    for part in (total or {}, more or {}):
        for key, value in part.items():
            out[key] += int(value)  # type: ignore[literal-required]
    return out


def merge_branches(tree: Sequence[Branch], more: Sequence[Mapping[str, Any]]) -> list[Branch]:
    """Reducer of ``tree``: a branch of a new round is added; one of a known round is updated.

    ``coq_generation`` adds the round's branch, and ``ir_check`` then returns
    ``{"round": r, "checks": [...]}`` to record its verdicts on that branch.
    """
    out = list(tree)
    where = {branch["round"]: i for i, branch in enumerate(out)}
    for branch in more:
        i = where.get(branch["round"])
        if i is None:
            where[branch["round"]] = len(out)
            out.append(branch)  # type: ignore[arg-type]
        else:
            out[i] = cast(Branch, {**out[i], **branch})
    return out


def merge_results(
    known: Mapping[str, dict[str, object]], more: Mapping[str, dict[str, object]]
) -> dict[str, dict[str, object]]:
    """Reducer of ``ir_cache``: results of newly retrieved queries join the known ones."""
    return {**known, **more}


class InputState(TypedDict):
    """What a caller passes to the graph."""

    question: str
    """The complex question ``Q``."""


class OutputState(TypedDict):
    """What the graph returns."""

    question: str
    answer: str
    """The short final answer, parsed from the traced final content."""
    final_content: str
    """The traced answer text, with ``[n]`` markers pointing at ``references``."""
    references: Annotated[list[Reference], operator.add]
    """The correct reasoning path *R*, one entry per node, in order."""
    rounds: int
    """LLM-IR interaction rounds used (1..max_rounds)."""
    tree: Annotated[list[Branch], merge_branches]
    """The Tree-of-Reasoning: every CoQ branch generated, in order."""
    usage: Annotated[Usage, add_usage]
    """What the run cost: LLM calls, words and tokens in and out, retrievals and readings."""
    warnings: Annotated[list[str], operator.add]
    """Everything that went wrong but was recovered from (malformed LLM output, etc.)."""


OUTPUT_KEYS: tuple[str, ...] = tuple(OutputState.__annotations__)
"""The keys of :class:`OutputState`, in order: what a finished run returns."""


class SearChainState(OutputState):
    """The working state of one SearChain run."""

    messages: NotRequired[Annotated[list[dict[str, str]], operator.add]]
    """The conversation with the LLM, as ``{"role", "content"}`` dicts."""
    chain: NotRequired[list[ChainNode]]
    """The current Chain-of-Query (the newest branch)."""
    processed: NotRequired[Annotated[list[str], operator.add]]
    """*M*: the queries IR has already processed."""
    feedback: NotRequired[Feedback | None]
    """*F*: the feedback of the round's IR check, or ``None`` when every node passed."""
    ir_cache: NotRequired[Annotated[dict[str, dict[str, object]], merge_results]]
    """Retrieval and reading results per query, reused when a later branch repeats a query."""
    review_pending: NotRequired[dict[str, Any] | None]
    """The correction waiting for a person (``review=True``): the payload of the ``review`` node's
    ``interrupt()``, written by ``ir_check`` with the passage and reading it is about, so that
    deciding it redoes no retrieval and no reading."""
    reviews: NotRequired[Annotated[dict[str, dict[str, Any]], merge_results]]
    """The decisions taken this run, by review id (``round-R-node-N``)."""
    last_step: NotRequired[str]
    """The step that ran last (the driver's): a run continues at ``coq_generation`` only after
    ``feedback``; anything else there starts a new run."""
