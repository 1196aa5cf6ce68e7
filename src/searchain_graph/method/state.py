"""Graph state for SearChain: the input, the output and the working state.

Everything stored here is a plain ``dict``/``list``/``str``/number, so that the
state is msgpack-serialisable and every LangGraph checkpointer can persist it.
The names follow Algorithm 1 of the paper (Xu et al., WWW 2024): ``processed``
is the set *M* of processed queries, ``path`` is the correct reasoning path *R*,
``feedback`` is *F* and ``tree`` is the Tree-of-Reasoning *T*.
"""

from __future__ import annotations

from typing import Literal, NotRequired

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
    references: list[Reference]
    """The correct reasoning path *R*, one entry per node, in order."""
    rounds: int
    """LLM-IR interaction rounds used (1..max_rounds)."""
    tree: list[Branch]
    """The Tree-of-Reasoning: every CoQ branch generated, in order."""
    usage: Usage
    warnings: list[str]
    """Everything that went wrong but was recovered from (malformed LLM output, etc.)."""


class SearChainState(OutputState):
    """The working state of one SearChain run."""

    messages: NotRequired[list[dict[str, str]]]
    """The conversation with the LLM, as ``{"role", "content"}`` dicts."""
    chain: NotRequired[list[ChainNode]]
    """The current Chain-of-Query (the newest branch)."""
    processed: NotRequired[list[str]]
    """*M*: the queries IR has already processed."""
    feedback: NotRequired[Feedback | None]
    """*F*: the pending feedback, or ``None`` when every node passed."""
    ir_cache: NotRequired[dict[str, dict[str, object]]]
    """Retrieval and reading results per query, reused when a later branch repeats a query."""
