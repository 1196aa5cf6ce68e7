"""The registry of every method ``searchain eval`` runs: a graph factory and a description each.

:data:`METHODS` maps a method name to a :data:`GraphFactory`, ``(llm, retriever, reader, task)
-> compiled graph``; :data:`METHOD_DESCRIPTIONS` gives each name one line, citing the paper it
comes from; ``searchain eval --help`` prints them. All methods are LangGraph graphs built from
the same LLM, retriever and reader:

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

A factory imports its graph builder only when it is called, so importing this module stays
cheap. :func:`parse_methods` turns a ``--methods`` value into registry names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever

from searchain_graph.ir.readers.base import Reader

GraphFactory = Callable[[BaseChatModel, BaseRetriever, Reader, str], Any]
"""``(llm, retriever, reader, task) -> compiled graph``."""


def _searchain(**options: Any) -> GraphFactory:
    def build(llm: BaseChatModel, retriever: BaseRetriever, reader: Reader, task: str) -> Any:
        from searchain_graph.method.graph import create_searchain_graph

        return create_searchain_graph(llm, retriever, reader, task=task, **options)

    return build


def _baseline(factory_name: str, *, retriever: bool = False, reader: bool = False) -> GraphFactory:
    def build(llm: BaseChatModel, retr: BaseRetriever, rdr: Reader, task: str) -> Any:
        from searchain_graph.evaluation import baselines

        factory = getattr(baselines, factory_name)
        args: list[Any] = [llm]
        if retriever:
            args.append(retr)
        if reader:
            args.append(rdr)
        return factory(*args, task=task)

    return build


METHODS: dict[str, GraphFactory] = {
    "searchain": _searchain(),
    "searchain_no_ir": _baseline("create_searchain_no_ir_graph"),
    "searchain_no_verification": _searchain(verification=False),
    "searchain_no_completion": _searchain(completion=False),
    "ircot": _baseline("create_ircot_graph", retriever=True),
    "self_ask": _baseline("create_self_ask_graph", retriever=True, reader=True),
    "direct_retrieval": _baseline("create_direct_retrieval_graph", retriever=True),
    "direct": _baseline("create_direct_graph"),
    "cot": _baseline("create_cot_graph"),
    "cot_sc": _baseline("create_cot_sc_graph"),
    "recite": _baseline("create_recite_graph"),
    "self_ask_no_ir": _baseline("create_self_ask_no_ir_graph"),
    "least_to_most": _baseline("create_least_to_most_graph"),
    "react": _baseline("create_react_graph", retriever=True),
    "react_agent": _baseline("create_react_agent_graph", retriever=True),
    "verify_and_edit": _baseline("create_verify_and_edit_graph", retriever=True),
    "dsp": _baseline("create_dsp_graph", retriever=True),
}
"""Every method the harness runs, by name."""

METHOD_DESCRIPTIONS: dict[str, str] = {
    "searchain": "SearChain (Xu et al., WWW 2024): chain-of-query, verified and completed by IR, then traced",
    "searchain_no_ir": "SearChain 'w/o IR' (Xu et al. 2024): one chain-of-query from the LLM alone (Figure 8 prompt)",
    "searchain_no_verification": (
        "SearChain 'w/o Verification' ablation (Xu et al. 2024): IR only completes unsolved queries"
    ),
    "searchain_no_completion": (
        "SearChain 'w/o Completion' ablation (Xu et al. 2024): IR only verifies answered queries"
    ),
    "ircot": "IRCoT (Trivedi et al., ACL 2023): retrieval interleaved with chain-of-thought, the main baseline",
    "self_ask": "Self-Ask with retrieval (Press et al., 2023): follow-up questions answered from passages",
    "direct_retrieval": "retrieve passages with the question, then answer from them",
    "direct": "direct prompting, no retrieval",
    "cot": "chain-of-thought prompting (Wei et al., NeurIPS 2022), no retrieval",
    "cot_sc": "CoT with self-consistency (Wang et al., ICLR 2023): 5 sampled chains, majority vote, no retrieval",
    "recite": "Recite-and-Answer (Sun et al., ICLR 2023): recite a passage from memory, answer from it",
    "self_ask_no_ir": "Self-Ask without IR (Press et al., 2023): the model answers its own follow-ups",
    "least_to_most": "Least-to-Most (Zhou et al., ICLR 2023): decompose, then solve sub-questions in order",
    "react": "ReAct (Yao et al., ICLR 2023), text Search/Finish actions, CoT-SC backoff (Table 1's React->CoT-SC)",
    "react_agent": "ReAct on LangChain's create_agent with a search tool (needs bind_tools), CoT-SC backoff",
    "verify_and_edit": (
        "Verify-and-Edit (Zhao et al., ACL 2023): CoT-SC; a split vote's rationale verified by retrieval and edited"
    ),
    "dsp": "DSP (Khattab et al., 2022): DSPy's multi-hop retrieve-then-read program, run by dspy (the eval extra)",
}
"""One line per method of :data:`METHODS`, for ``searchain eval --help``."""


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
