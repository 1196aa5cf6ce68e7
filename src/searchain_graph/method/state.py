"""Graph state for SearChain: the input, the output and the working state.

Everything stored here is a plain ``dict``/``list``/``str``/number, so that the
state is msgpack-serialisable and every LangGraph checkpointer can persist it.
The names follow Algorithm 1 of the paper (Xu et al., WWW 2024): ``processed``
is the set *M* of processed queries, ``references`` is the correct reasoning path *R*,
``feedback`` is *F* and ``tree`` is the Tree-of-Reasoning *T*.

What accumulates over a run (*M*, *R*, *T*, the conversation, the warnings, the cost counters and
the IR results) is kept by reducers, so that each node returns only what it adds: a round's new
branch, the nodes IR checked, one LLM call's cost. :func:`new_run` starts a run afresh (LangGraph's
``Overwrite`` bypasses the reducers), so a second question on a checkpointed thread does not
inherit the first one's path.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, cast

from langgraph.types import Overwrite
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
    llm_answer: str | None
    passage: str
    confidence: float
    message: str
    """The rendered feedback prompt sent to the LLM (the paper's template)."""


class Branch(TypedDict):
    """One Chain-of-Query generated in one round: a branch of the Tree-of-Reasoning."""

    round: int
    parent: dict[str, object] | None
    """Where this branch restarted from: ``None`` for the root (the question), else
    ``{"round": r, "node": i, "query": q, "kind": "correction" | "completion"}``."""
    nodes: list[ChainNode]
    final_content: str | None
    raw: str
    """The LLM's raw text for this branch."""
    checks: list[dict[str, object]]
    """The IR verdict on each node checked this round (action, ``g``, ``f``)."""


class Usage(TypedDict):
    """Cost counters for one question (compare with the paper's Table 5)."""

    llm_calls: int
    words_in: int
    words_out: int
    input_tokens: int
    output_tokens: int
    retrieval_calls: int
    reader_calls: int


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
    }


def add_usage(total: Mapping[str, int] | None, more: Mapping[str, int] | None) -> Usage:
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


ACCUMULATED: tuple[str, ...] = ("messages", "tree", "warnings", "references", "processed", "usage", "ir_cache")
"""The channels kept by a reducer, which :func:`new_run` resets."""


def new_run(**first: Any) -> dict[str, Any]:
    """The update that starts a run: every accumulated channel replaced by ``first`` or emptied.

    Example:
        ``new_run(messages=[prompt, reply], tree=[branch])`` empties *M*, *R*, the warnings and
        the counters, and starts the conversation and the tree with the first round's.
    """
    unknown = set(first) - set(ACCUMULATED)
    if unknown:
        raise ValueError(f"new_run() got channels without a reducer: {sorted(unknown)}")
    empty: dict[str, Any] = {name: [] for name in ACCUMULATED}
    empty.update(usage=empty_usage(), ir_cache={})
    return {name: Overwrite(first.get(name, value)) for name, value in empty.items()}


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
    """*F*: the pending feedback, or ``None`` when every node passed."""
    ir_cache: NotRequired[Annotated[dict[str, dict[str, object]], merge_results]]
    """Retrieval and reading results per query, reused when a later branch repeats a query."""
