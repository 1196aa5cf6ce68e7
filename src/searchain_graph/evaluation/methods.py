"""The registry of every method ``searchain eval`` runs: one :class:`MethodSpec` record each.

:data:`METHODS` maps a method name to its record, and everything else reads it: ``searchain eval
--help`` lists the names and descriptions, :mod:`~searchain_graph.evaluation.harness` builds each
graph with the record's builder and counts its reasoning steps with the record's counter, and
:mod:`~searchain_graph.evaluation.report` prints the paper's figures from it. All methods are
LangGraph graphs built from the same LLM, retriever and reader:

* ``searchain``: the full method (SearChain, Xu et al., WWW 2024); ``searchain_no_ir``,
  ``searchain_no_verification``, ``searchain_no_completion``: its ablations;
* ``ircot``: IRCoT (Trivedi et al., ACL 2023), the main baseline; ``self_ask``: Self-Ask with
  retrieval (Press et al., 2023); ``direct_retrieval``: retrieve with the question, then answer;
* ``direct`` and ``cot`` (Wei et al., NeurIPS 2022): no retrieval;
* the rest of the paper's Table 1: ``cot_sc`` (Wang et al., 2023), ``recite`` (Sun et al., 2023),
  ``self_ask_no_ir`` (Press et al., 2023) and ``least_to_most`` (Zhou et al., 2023) without
  retrieval; with it, ``react`` (Yao et al., 2023, backing off to CoT-SC), ``react_agent`` (the
  same on LangChain's ``create_agent``), ``verify_and_edit`` (Zhao et al., 2023) and ``dsp``
  (Khattab et al., 2022: DSPy's multi-hop program, run by the ``dspy`` package).

To add a method, write its graph builder (a baseline: a module of :mod:`searchain_graph.baselines`)
and add its :class:`MethodSpec` to the records (``_SPECS``, in the order ``--help`` lists them):
the builder named by its ``"package.module:function"`` path, which is imported only when a graph
is built, so importing this module stays cheap; ``retrieves`` and ``reads`` say whether the builder
takes the retriever and the reader. The step counters of
:mod:`~searchain_graph.evaluation.method_spec` cover the usual outputs. Nothing else names a
method (``docs/evaluation.md``, "Adding a baseline"). :data:`METHOD_DESCRIPTIONS` is a view of the
records' descriptions, kept for callers; :func:`parse_methods` turns a ``--methods`` value into
registry names.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import fields

from searchain_graph.evaluation.method_spec import (
    GraphFactory,
    MethodSpec,
    count_chain_nodes,
    count_cot_sentences,
    count_follow_ups,
    count_nothing,
    count_references,
    count_rounds,
)
from searchain_graph.method.context import Context
from searchain_graph.method.prompts import COQ_DEMONSTRATION_NAMES, NO_IR_DEMONSTRATION_NAMES

__all__ = ["METHODS", "METHOD_DESCRIPTIONS", "GraphFactory", "MethodSpec", "parse_methods"]


def _table1(hotpotqa: float, musique: float, wiki: float, strategyqa: float) -> dict[str, float]:
    """A row of the paper's Table 1 (cover-EM %), by dataset name."""
    return {"hotpotqa": hotpotqa, "musique": musique, "2wikimultihopqa": wiki, "strategyqa": strategyqa}


# -- the records ---------------------------------------------------------------------------------------
SEARCHAIN = "searchain_graph.method.graph:create_searchain_graph"
"""SearChain's builder, for the full method and its ablations (a record fixes an ablation's switch)."""

SEARCHAIN_OPTIONS = tuple(f.name for f in fields(Context) if f.name != "task")
"""What ``searchain eval`` may set on SearChain and its ablations: the fields of its ``Context``
(``--preset``, ``--demonstrations``, ``--duplicates``, ...); the task is the dataset's."""


def _without(ablated: str) -> tuple[str, ...]:
    """SearChain's options but the one an ablation fixes (a record never passes a keyword twice)."""
    return tuple(o for o in SEARCHAIN_OPTIONS if o != ablated)


_SPECS = (
    MethodSpec(
        "searchain",
        "SearChain (Xu et al., WWW 2024): chain-of-query, verified and completed by IR, then traced",
        builder=SEARCHAIN,
        steps=count_references,
        retrieves=True,
        reads=True,
        paper_accuracy=_table1(56.91, 17.07, 46.27, 76.95),
        paper_cost=(390, 189, 2.21, 8.52),
        options=SEARCHAIN_OPTIONS,
        caches=True,
        demonstration_names=COQ_DEMONSTRATION_NAMES,
    ),
    MethodSpec(
        "searchain_no_ir",
        "SearChain 'w/o IR' (Xu et al. 2024): one chain-of-query from the LLM alone (Figure 8 prompt)",
        builder="searchain_graph.baselines:create_searchain_no_ir_graph",
        steps=count_chain_nodes,
        paper_accuracy=_table1(38.36, 13.61, 40.49, 75.62),
        paper_steps=(4.16, 4.66, 5.06),
        options=("demonstrations",),
        demonstration_names=NO_IR_DEMONSTRATION_NAMES,
    ),
    MethodSpec(
        "searchain_no_verification",
        "SearChain 'w/o Verification' ablation (Xu et al. 2024): IR only completes unsolved queries",
        builder=SEARCHAIN,
        builder_kwargs={"verification": False},
        steps=count_references,
        retrieves=True,
        reads=True,
        paper_accuracy=_table1(46.11, 14.70, 42.67, 75.98),
        options=_without("verification"),
        caches=True,
        demonstration_names=COQ_DEMONSTRATION_NAMES,
    ),
    MethodSpec(
        "searchain_no_completion",
        "SearChain 'w/o Completion' ablation (Xu et al. 2024): IR only verifies answered queries",
        builder=SEARCHAIN,
        builder_kwargs={"completion": False},
        steps=count_references,
        retrieves=True,
        reads=True,
        paper_accuracy=_table1(53.05, 15.86, 43.64, 76.53),
        options=_without("completion"),
        caches=True,
        demonstration_names=COQ_DEMONSTRATION_NAMES,
    ),
    MethodSpec(  # IRCoT is not in the paper's Table 1
        "ircot",
        "IRCoT (Trivedi et al., ACL 2023): retrieval interleaved with chain-of-thought, the main baseline",
        builder="searchain_graph.baselines:create_ircot_graph",
        steps=count_rounds,
        retrieves=True,
    ),
    MethodSpec(
        "self_ask",
        "Self-Ask with retrieval (Press et al., 2023): follow-up questions answered from passages",
        builder="searchain_graph.baselines:create_self_ask_graph",
        steps=count_rounds,
        retrieves=True,
        reads=True,
        paper_accuracy=_table1(40.05, 14.28, 39.58, 67.65),
        paper_cost=(401, 63, 2.19, 6.63),
    ),
    MethodSpec(
        "direct_retrieval",
        "retrieve passages with the question, then answer from them",
        builder="searchain_graph.baselines:create_direct_retrieval_graph",
        steps=count_nothing,
        retrieves=True,
        paper_accuracy=_table1(34.09, 10.22, 30.01, 66.78),
    ),
    MethodSpec(
        "direct",
        "direct prompting, no retrieval",
        builder="searchain_graph.baselines:create_direct_graph",
        steps=count_nothing,
        paper_accuracy=_table1(31.95, 5.91, 25.82, 66.25),
    ),
    MethodSpec(
        "cot",
        "chain-of-thought prompting (Wei et al., NeurIPS 2022), no retrieval",
        builder="searchain_graph.baselines:create_cot_graph",
        steps=count_cot_sentences,
        paper_accuracy=_table1(35.04, 9.46, 30.41, 65.83),
        paper_steps=(2.25, 2.23, 2.19),
    ),
    MethodSpec(
        "cot_sc",
        "CoT with self-consistency (Wang et al., ICLR 2023): 5 sampled chains, majority vote, no retrieval",
        builder="searchain_graph.baselines:create_cot_sc_graph",
        steps=count_cot_sentences,
        paper_accuracy=_table1(36.85, 10.02, 32.68, 70.84),
    ),
    MethodSpec(
        "recite",
        "Recite-and-Answer (Sun et al., ICLR 2023): recite a passage from memory, answer from it",
        builder="searchain_graph.baselines:create_recite_graph",
        steps=count_nothing,
        paper_accuracy=_table1(36.49, 10.97, 32.53, 70.47),
    ),
    MethodSpec(
        "self_ask_no_ir",
        "Self-Ask without IR (Press et al., 2023): the model answers its own follow-ups",
        builder="searchain_graph.baselines:create_self_ask_no_ir_graph",
        steps=count_follow_ups,
        paper_accuracy=_table1(33.95, 11.10, 35.65, 65.45),
    ),
    MethodSpec(
        "least_to_most",
        "Least-to-Most (Zhou et al., ICLR 2023): decompose, then solve sub-questions in order",
        builder="searchain_graph.baselines:create_least_to_most_graph",
        steps=count_rounds,
        paper_accuracy=_table1(34.05, 11.45, 32.88, 65.78),
    ),
    MethodSpec(
        "react",
        "ReAct (Yao et al., ICLR 2023), text Search/Finish actions, CoT-SC backoff (Table 1's React->CoT-SC)",
        builder="searchain_graph.baselines:create_react_graph",
        steps=count_rounds,
        retrieves=True,
        paper_accuracy=_table1(43.15, 15.49, 40.36, 70.43),
        paper_cost=(938, 110, 2.35, 8.25),  # "React→CoT-SC"
    ),
    MethodSpec(
        "react_agent",
        "ReAct on LangChain's create_agent with a search tool (needs bind_tools), CoT-SC backoff",
        builder="searchain_graph.baselines:create_react_agent_graph",
        steps=count_rounds,
        retrieves=True,
        needs_tools=True,
    ),
    MethodSpec(
        "verify_and_edit",
        "Verify-and-Edit (Zhao et al., ACL 2023): CoT-SC; a split vote's rationale verified by retrieval and edited",
        builder="searchain_graph.baselines:create_verify_and_edit_graph",
        steps=count_cot_sentences,
        retrieves=True,
        paper_accuracy=_table1(44.03, 15.57, 40.83, 71.09),
        paper_cost=(565, 307, 2.40, 13.90),
    ),
    MethodSpec(
        "dsp",
        "DSP (Khattab et al., 2022): DSPy's multi-hop retrieve-then-read program, run by dspy (the eval extra)",
        builder="searchain_graph.baselines:create_dsp_graph",
        steps=count_rounds,
        retrieves=True,
        extras=("eval",),
        paper_accuracy=_table1(51.97, 15.83, 43.52, 72.41),
        paper_cost=(1759, 155, 2.15, 10.47),
    ),
)

METHODS: dict[str, MethodSpec] = {spec.name: spec for spec in _SPECS}
"""Every method the harness runs, by name, in the order ``all`` runs them and ``--help`` lists them.

A record is itself a :data:`GraphFactory`: ``METHODS[name](llm, retriever, reader, task)``
builds the method's graph.
"""


class _Descriptions(Mapping[str, str]):
    """``name -> description`` of :data:`METHODS`, read from the registry on each access."""

    def __getitem__(self, name: str) -> str:
        return METHODS[name].description

    def __iter__(self) -> Iterator[str]:
        return iter(METHODS)

    def __len__(self) -> int:
        return len(METHODS)


METHOD_DESCRIPTIONS: Mapping[str, str] = _Descriptions()
"""One line per method of :data:`METHODS` (a view of its records' ``description``)."""


def parse_methods(spec: str | Sequence[str]) -> list[str]:
    """``"searchain,ircot"`` (or ``"all"``) to a list of method names.

    Raises:
        ValueError: an unknown method name (the message lists the known ones).
    """
    names = [s.strip() for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if names == ["all"]:
        return list(METHODS)
    unknown = [n for n in names if n not in METHODS]
    if unknown or not names:
        raise ValueError(f"unknown method(s) {', '.join(unknown) or '(none)'}: choose from {', '.join(METHODS)}")
    return list(dict.fromkeys(names))
