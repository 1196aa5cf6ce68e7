"""What the evaluation knows of one method: :class:`MethodSpec`, and the usual step counters.

A :class:`MethodSpec` is one frozen record: the method's name and one-line description, its graph
builder (named by a ``"package.module:function"`` path, imported when the graph is built), how its
reasoning steps are counted from the graph's output (the paper's Table 4), which of the shared
retriever and reader it calls, what it needs installed, and the paper's figures for it.
:data:`~searchain_graph.evaluation.methods.METHODS` holds one per method; calling a record
(:meth:`MethodSpec.__call__`) imports its builder and builds the graph.

The counters (``graph output -> steps``) cover the outputs of this package's methods:
:func:`count_references` (the nodes of SearChain's chain), :func:`count_chain_nodes` (the nodes of
a chain-of-query written without IR), :func:`count_cot_sentences` (chain-of-thought sentences
before the answer), :func:`count_follow_ups` (Self-Ask's "Follow up:" lines), :func:`count_rounds`
(the graph's own rounds) and :func:`count_nothing` (a direct answer). Each imports what it parses
with when called, so that importing this module stays cheap.
"""

from __future__ import annotations

import importlib
import re
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
    "load_builder",
]

GraphFactory = Callable[..., Any]
"""``(llm, retriever, reader, task, **options) -> compiled graph``; ``options`` are those the
method's record declares (:attr:`MethodSpec.options`)."""

StepCounter = Callable[[Mapping[str, Any]], int]
"""``graph output -> reasoning steps`` (the paper's Table 4)."""

_BUILDER_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def load_builder(builder: str | Callable[..., Any]) -> Callable[..., Any]:
    """The graph builder a record names: ``"package.module:function"`` imported now, or the callable given.

    Raises:
        ImportError: the module does not import (a missing extra, a moved module).
        AttributeError: the module has no such function.
    """
    if not isinstance(builder, str):
        return builder
    module, _, name = builder.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


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
    from searchain_graph.baselines import reasoning_steps

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

    A record is itself a :data:`GraphFactory`: ``spec(llm, retriever, reader, task)`` imports
    :attr:`builder` and calls it with what the method uses:
    ``builder(llm, [retriever,] [reader,] task=task, **builder_kwargs, **options)``, the retriever
    when it :attr:`retrieves`, the reader when it :attr:`reads`.

    Attributes:
        name: The method's name in ``--methods``, the records and the report (no comma, not ``all``).
        description: One line, citing the paper the method comes from (``searchain eval --help``).
        builder: The function that builds the graph, as a ``"package.module:function"`` path
            (``"searchain_graph.baselines:create_ircot_graph"``), imported only when a graph is
            built so that the registry stays cheap to import; or the function itself (a method
            defined in code, a test's). It takes ``llm``, then ``retriever`` if the method
            :attr:`retrieves`, then ``reader`` if it :attr:`reads`, positionally, and ``task``,
            :attr:`builder_kwargs` and :attr:`options` by keyword.
        steps: ``graph output -> reasoning steps`` (Table 4), e.g. :func:`count_rounds`.
        retrieves: The method calls the retriever (``False``: closed-book); its builder takes it.
        reads: The method calls the reader; its builder takes it, after the retriever (a method
            that reads also retrieves: the reader reads retrieved passages).
        extras: The ``searchain-graph`` pip extras it needs (``dsp``: ``("eval",)``, for ``dspy``).
        needs_tools: It needs a chat model that implements ``bind_tools`` (tool calling).
        paper_accuracy: The paper's Table 1, cover-EM % by dataset name (empty: not in it).
        paper_steps: The paper's Table 4 (MuSiQue): steps for 2-, 3- and 4-hop questions.
        paper_cost: The paper's Table 5: words in, words out, rounds and seconds per question.
        options: The keyword options its builder takes from ``searchain eval`` (SearChain's: the
            fields of its ``Context``); the harness passes a method only the options it names.
        demonstration_names: The entities of its prompts' worked examples; the report counts the
            answers and chains that name one for a question not about them (copied).
        caches: Its builder takes ``cache`` (a LangGraph ``BaseCache``): retrieval and reading as
            cached tasks (``searchain eval --cache FILE``).
        builder_kwargs: Keyword arguments the record fixes for its builder: an ablation's switch
            (``{"verification": False}``: SearChain without verification).
    """

    name: str
    description: str
    builder: str | Callable[..., Any]
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
    builder_kwargs: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        name = self.name
        if not name or name != name.strip() or "," in name or name == "all":
            raise ValueError(f"a method name must be non-empty, without commas or spaces around, not 'all': {name!r}")
        if not self.description.strip():
            raise ValueError(f"method {name!r} needs a one-line description")
        builder = self.builder
        if not (isinstance(builder, str) or callable(builder)) or not callable(self.steps):
            raise TypeError(f"method {name!r}: builder and steps must be callables (builder may be a path)")
        if isinstance(builder, str) and not _BUILDER_PATH.fullmatch(builder):
            raise ValueError(f"method {name!r}: builder {builder!r} is not a 'package.module:function' path")
        if self.reads and not self.retrieves:
            raise ValueError(f"method {name!r} reads, so it retrieves too (the reader reads retrieved passages)")

    def __call__(
        self, llm: BaseChatModel, retriever: BaseRetriever, reader: Reader, task: str, cache: Any = None, **options: Any
    ) -> Any:
        """Build the method's graph: import :attr:`builder` and call it with what the method uses.

        ``builder(llm, [retriever,] [reader,] task=task, **builder_kwargs, **options)``: the
        retriever when the method :attr:`retrieves`, the reader when it :attr:`reads`. ``cache``
        (a LangGraph ``BaseCache``) goes to a method that :attr:`caches`; the others run without one.

        Raises:
            TypeError: an option is not one of :attr:`options`.
        """
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            raise TypeError(f"method {self.name!r} takes no option {', '.join(unknown)} (it takes: {self.options})")
        if cache is not None and self.caches:
            options = {**options, "cache": cache}
        uses: list[Any] = [llm]
        if self.retrieves:
            uses.append(retriever)
        if self.reads:
            uses.append(reader)
        return load_builder(self.builder)(*uses, task=task, **self.builder_kwargs, **options)

    def options_of(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """The entries of ``options`` this method takes (the rest do not apply to it)."""
        return {k: v for k, v in options.items() if k in self.options and v is not None}
