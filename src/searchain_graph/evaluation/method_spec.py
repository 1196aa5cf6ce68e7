"""What the evaluation knows of one method: :class:`MethodSpec`, and the usual step counters.

A :class:`MethodSpec` is one frozen record: the method's name and one-line description, its graph
factory, how its reasoning steps are counted from the graph's output (the paper's Table 4), which
of the shared retriever and reader it calls, what it needs installed, and the paper's figures for
it. :data:`~searchain_graph.evaluation.methods.METHODS` holds one per method.

The counters (``graph output -> steps``) cover the outputs of this package's methods:
:func:`count_references` (the nodes of SearChain's chain), :func:`count_chain_nodes` (the nodes of
a chain-of-query written without IR), :func:`count_cot_sentences` (chain-of-thought sentences
before the answer), :func:`count_follow_ups` (Self-Ask's "Follow up:" lines), :func:`count_rounds`
(the graph's own rounds) and :func:`count_nothing` (a direct answer). Each imports what it parses
with when called, so that importing this module stays cheap.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.retrievers import BaseRetriever

    from searchain_graph.ir.readers.base import Reader

__all__ = [
    "GraphFactory",
    "MethodSpec",
    "StepCounter",
    "count_chain_nodes",
    "count_cot_sentences",
    "count_follow_ups",
    "count_nothing",
    "count_references",
    "count_rounds",
]

GraphFactory = Callable[..., Any]
"""``(llm, retriever, reader, task, **options) -> compiled graph``; ``options`` are those the
method's record declares (:attr:`MethodSpec.options`)."""

StepCounter = Callable[[Mapping[str, Any]], int]
"""``graph output -> reasoning steps`` (the paper's Table 4)."""


def count_references(out: Mapping[str, Any]) -> int:
    """The nodes of SearChain's final chain: one reference each."""
    return len(out.get("references") or [])


def count_chain_nodes(out: Mapping[str, Any]) -> int:
    """The nodes of the chain-of-query in ``final_content`` (SearChain without IR)."""
    from searchain_graph.method.parsing import parse_chain

    return len(parse_chain(out.get("final_content") or "").nodes)


def count_cot_sentences(out: Mapping[str, Any]) -> int:
    """The chain-of-thought sentences of ``final_content`` before the one that states the answer.

    CoT's chain, CoT-SC's winning chain, Verify-and-Edit's (edited) rationale.
    """
    from searchain_graph.evaluation.baselines import reasoning_steps

    return reasoning_steps(str(out.get("final_content") or ""))


def count_follow_ups(out: Mapping[str, Any]) -> int:
    """The ``Follow up:`` lines of ``final_content`` (Self-Ask without IR)."""
    return str(out.get("final_content") or "").lower().count("follow up:")


def count_rounds(out: Mapping[str, Any]) -> int:
    """The graph's own ``rounds``: IRCoT's steps, Self-Ask's follow-ups, sub-questions, searches, hops."""
    return int(out.get("rounds") or 0)


def count_nothing(out: Mapping[str, Any]) -> int:
    """No reasoning steps: a direct answer (direct prompting, direct retrieval, Recite-and-Answer)."""
    return 0


@dataclass(frozen=True)
class MethodSpec:
    """One method of ``searchain eval``: all that ``--help``, the harness and the report know of it.

    A record is itself a :data:`GraphFactory`: ``spec(llm, retriever, reader, task)`` calls
    ``spec.factory``.

    Attributes:
        name: The method's name in ``--methods``, the records and the report (no comma, not ``all``).
        description: One line, citing the paper the method comes from (``searchain eval --help``).
        factory: ``(llm, retriever, reader, task) -> compiled graph``; it should import its graph
            builder when called, so that the registry stays cheap to import.
        steps: ``graph output -> reasoning steps`` (Table 4), e.g. :func:`count_rounds`.
        retrieves: The method calls the retriever (``False``: closed-book).
        reads: The method calls the reader.
        extras: The ``searchain-graph`` pip extras it needs (``dsp``: ``("eval",)``, for ``dspy``).
        needs_tools: It needs a chat model that implements ``bind_tools`` (tool calling).
        paper_accuracy: The paper's Table 1, cover-EM % by dataset name (empty: not in it).
        paper_steps: The paper's Table 4 (MuSiQue): steps for 2-, 3- and 4-hop questions.
        paper_cost: The paper's Table 5: words in, words out, rounds and seconds per question.
        options: The keyword options its factory takes from ``searchain eval`` (``demonstrations``,
            ``is_duplicate``); the harness passes a method only the options it names.
        demonstration_names: The entities of its prompts' worked examples; the report counts the
            answers and chains that name one for a question not about them (copied).
        caches: Its factory takes ``cache`` (a LangGraph ``BaseCache``): retrieval and reading as
            cached tasks (``searchain eval --cache FILE``).
    """

    name: str
    description: str
    factory: GraphFactory
    steps: StepCounter
    retrieves: bool = False
    reads: bool = False
    extras: tuple[str, ...] = ()
    needs_tools: bool = False
    paper_accuracy: Mapping[str, float] = field(default_factory=dict, hash=False)
    paper_steps: tuple[float, float, float] | None = None
    paper_cost: tuple[float, float, float, float] | None = None
    options: tuple[str, ...] = ()
    demonstration_names: tuple[str, ...] = ()
    caches: bool = False

    def __post_init__(self) -> None:
        name = self.name
        if not name or name != name.strip() or "," in name or name == "all":
            raise ValueError(f"a method name must be non-empty, without commas or spaces around, not 'all': {name!r}")
        if not self.description.strip():
            raise ValueError(f"method {name!r} needs a one-line description")
        if not callable(self.factory) or not callable(self.steps):
            raise TypeError(f"method {name!r}: factory and steps must be callables")

    def __call__(
        self, llm: BaseChatModel, retriever: BaseRetriever, reader: Reader, task: str, cache: Any = None, **options: Any
    ) -> Any:
        """Build the method's graph (``self.factory(llm, retriever, reader, task, **options)``).

        ``cache`` (a LangGraph ``BaseCache``) goes to a method that :attr:`caches`; the others
        run without one.

        Raises:
            TypeError: an option is not one of :attr:`options`.
        """
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise TypeError(f"method {self.name!r} takes no option {', '.join(unknown)} (it takes: {self.options})")
        if cache is not None and self.caches:
            options = {**options, "cache": cache}
        return self.factory(llm, retriever, reader, task, **options)

    def options_of(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The entries of ``options`` this method takes (the rest do not apply to it)."""
        return {k: v for k, v in options.items() if k in self.options and v is not None}
