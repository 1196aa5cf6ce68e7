"""Verify-and-Edit (Zhao et al., ACL 2023): CoT-SC, and an edited rationale where the vote is split.

Zhao et al. sample ``n`` chains of thought and keep the majority answer when at least
``ceil(n / 2)`` chains agree on it. Below that consistency, the majority chain's rationale is
verified sentence by sentence: the LLM writes a verifying question for a sentence, the question
retrieves external knowledge, the most relevant facts of it are selected, and the LLM answers the
verifying question from them; that answer replaces the sentence. The edited rationale then goes
back to the LLM, which states the answer again.

Here the knowledge is the harness's retriever (top-1 passage per verifying question; Zhao et al.
compared DrQA over Wikipedia, the Wikipedia API and Google), and the facts are the passage's
``facts`` sentences sharing the most words with the question (Zhao et al. ranked sentences with
an embedding similarity; word overlap keeps the method free of a second model).
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from searchain_graph.evaluation.baselines.common import (
    MethodOutput,
    MethodState,
    _cot_examples,
    _merge,
    _sentences,
)
from searchain_graph.evaluation.baselines.driver import _builder, _compile, _Methods, _Node
from searchain_graph.evaluation.baselines.prompts import BASELINE_ANSWER_FORMATS
from searchain_graph.evaluation.baselines.prompts_more import VE_ANSWER_PROMPT, VE_FINAL_PROMPT, VE_QUESTION_PROMPT
from searchain_graph.evaluation.baselines.voting import _check_paths, majority, voted_chains
from searchain_graph.ir.corpus import passage_text
from searchain_graph.method.state import InputState

__all__ = ["create_verify_and_edit_graph", "rationale_sentences", "select_facts"]

_WORD = re.compile(r"\w+")
FACT_CHARS = 600
"""Most characters of selected facts shown to the LLM for one verifying question."""


def rationale_sentences(chain: str) -> list[str]:
    """The sentences of a chain of thought, less the ones that state the answer ("... answer is ...")."""
    lines = (" ".join(line.split()) for line in (chain or "").splitlines())
    return [s for line in lines for s in _sentences(line) if "answer is" not in s.lower()]


def select_facts(question: str, passage: str, facts: int = 3) -> str:
    """The ``facts`` sentences of ``passage`` sharing the most words with ``question``, in passage order."""
    sentences = _sentences(" ".join(passage.split()))
    asked = {w.lower() for w in _WORD.findall(question)}
    scored = sorted(
        range(len(sentences)),
        key=lambda i: (-len(asked & {w.lower() for w in _WORD.findall(sentences[i])}), i),
    )
    kept = sorted(scored[:facts])
    return " ".join(sentences[i] for i in kept)[:FACT_CHARS]


def create_verify_and_edit_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    *,
    samples: int = 5,
    temperature: float = 0.7,
    max_sentences: int = 4,
    facts: int = 3,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "verify_and_edit",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """Verify-and-Edit (Zhao et al., 2023): CoT-SC; a split vote has its rationale verified and edited.

    ``cot_sc`` samples ``samples`` chains with CoT's prompt and votes
    (:func:`~searchain_graph.evaluation.baselines.create_cot_sc_graph`). When fewer than
    ``ceil(samples / 2)`` chains agree, ``verify_rationale`` takes the winning chain's first
    ``max_sentences`` rationale sentences and, for each, asks for a verifying question
    (``verifying_question``), retrieves the top-1 passage with it, selects ``facts`` sentences of
    it (:func:`select_facts`) and asks for the edited sentence (``edited_sentence``);
    ``edited_answer`` then asks for the answer after the edited rationale. A consistent vote
    ends the run after ``cot_sc``, with no retrieval.

    Args:
        llm: Any LangChain chat model that takes ``temperature`` per call.
        retriever: Any LangChain retriever; its first document is the external knowledge.
        samples: Chains sampled (Zhao et al. used 5).
        temperature: Sampling temperature (> 0 when ``samples`` > 1).
        max_sentences: Most rationale sentences verified (each costs two LLM calls and a retrieval).
        facts: Sentences of the retrieved passage kept as facts.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM and the retriever.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = 1 plus the sentences verified, and ``final_content`` the (edited) rationale.
    """
    _check_paths(samples, temperature, "samples")
    if not isinstance(max_sentences, int) or max_sentences < 1:
        raise ValueError(f"max_sentences must be >= 1, got {max_sentences!r}")
    if not isinstance(facts, int) or facts < 1:
        raise ValueError(f"facts must be >= 1, got {facts!r}")
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars, retriever=retriever)
    threshold = math.ceil(samples / 2)

    def vote(state: MethodState) -> _Node:
        update = methods.start(state)
        out, answers = yield from voted_chains(
            methods, {**update, "rounds": 1}, update["question"], samples, temperature
        )
        _, agreeing = majority(answers)
        sentences = rationale_sentences(out["final_content"])[:max_sentences]
        if agreeing >= threshold or not sentences:
            return out
        note = f"consistency {agreeing}/{samples} below {threshold}: rationale verified and edited"
        return {**out, "pending": True, "cot": sentences, "warnings": [*out["warnings"], note]}

    def verify(state: MethodState) -> _Node:
        usage, passages, edited = state["usage"], list(state["passages"]), []
        for i, sentence in enumerate(state.get("cot") or [], start=1):
            prompt = VE_QUESTION_PROMPT.format(sentence=sentence)
            reply, usage = yield from methods.generate(usage, prompt, "verifying_question", i, ["\n"])
            question = " ".join(reply.split()) or sentence
            docs, usage = yield from methods.retrieve(usage, question, 1, i)
            if not docs:
                edited.append(sentence)
                continue
            doc = Document(page_content=docs[0]["page_content"], metadata=docs[0]["metadata"])
            facts_text = select_facts(question, passage_text(doc), facts)
            prompt = VE_ANSWER_PROMPT.format(facts=facts_text, question=question)
            reply, usage = yield from methods.generate(usage, prompt, "edited_sentence", i, ["\n"])
            edited.append(" ".join(reply.split()) or sentence)
            passages = _merge(passages, docs[:1])
        rounds = 1 + len(state.get("cot") or [])
        return {"usage": usage, "passages": passages, "cot": edited, "rounds": rounds}

    def answer(state: MethodState) -> _Node:
        rationale = " ".join(state.get("cot") or [])
        prompt = VE_FINAL_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[methods.task],
            examples=_cot_examples(methods.task),
            question=methods.question(state["question"]),
            rationale=rationale,
        )
        reply, usage = yield from methods.generate(state["usage"], prompt, "edited_answer", state["rounds"], ["\nQ:"])
        content = f"{rationale} So the answer is: {reply.strip()}"
        out = methods.finish({"usage": usage}, content, list(state["warnings"]))
        if not out["answer"]:  # keep the vote's answer when the edited chain states none
            out["answer"] = state["answer"]
        return out

    def route(state: MethodState) -> Literal["verify_rationale", "__end__"]:
        return "verify_rationale" if state.get("pending") else "__end__"

    builder = _builder()
    builder.add_node("cot_sc", methods.node(vote, "cot_sc"), retry_policy=retry_policy)
    builder.add_node("verify_rationale", methods.node(verify, "verify_rationale"), retry_policy=retry_policy)
    builder.add_node("edited_answer", methods.node(answer, "edited_answer"), retry_policy=retry_policy)
    builder.add_edge(START, "cot_sc")
    builder.add_conditional_edges("cot_sc", route, ["verify_rationale", END])
    builder.add_edge("verify_rationale", "edited_answer")
    builder.add_edge("edited_answer", END)
    return _compile(builder, checkpointer, name)
