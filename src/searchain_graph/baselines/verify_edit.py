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
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodState, cot_examples, merge_passages, split_sentences
from searchain_graph.baselines.driver import (
    BaselineGraph,
    BaselineSettings,
    baseline_driver,
    compile_graph,
    finish,
    graph_builder,
)
from searchain_graph.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    VE_ANSWER_PROMPT,
    VE_FINAL_PROMPT,
    VE_QUESTION_PROMPT,
)
from searchain_graph.baselines.voting import check_paths, majority, voted_chains
from searchain_graph.ir.corpus import passage_text
from searchain_graph.method.steps import Generate, Retrieve, StepBody

__all__ = ["create_verify_and_edit_graph", "rationale_sentences", "select_facts"]

_WORD = re.compile(r"\w+")
FACT_CHARS = 600
"""Most characters of selected facts shown to the LLM for one verifying question."""


def rationale_sentences(chain: str) -> list[str]:
    """The sentences of a chain of thought, less the ones that state the answer ("... answer is ...")."""
    lines = (" ".join(line.split()) for line in (chain or "").splitlines())
    return [s for line in lines for s in split_sentences(line) if "answer is" not in s.lower()]


def select_facts(question: str, passage: str, facts: int = 3) -> str:
    """The ``facts`` sentences of ``passage`` sharing the most words with ``question``, in passage order."""
    sentences = split_sentences(" ".join(passage.split()))
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
) -> BaselineGraph:
    """Verify-and-Edit (Zhao et al., 2023): CoT-SC; a split vote has its rationale verified and edited.

    ``cot_sc`` samples ``samples`` chains with CoT's prompt and votes
    (:func:`~searchain_graph.baselines.create_cot_sc_graph`). When fewer than
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
    check_paths(samples, temperature, "samples")
    if not isinstance(max_sentences, int) or max_sentences < 1:
        raise ValueError(f"max_sentences must be >= 1, got {max_sentences!r}")
    if not isinstance(facts, int) or facts < 1:
        raise ValueError(f"facts must be >= 1, got {facts!r}")
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings, retriever=retriever, cot=[])
    threshold = math.ceil(samples / 2)

    def vote(state: MethodState, settings: BaselineSettings) -> StepBody:
        update = {"warnings": state["warnings"]}
        out, answers = yield from voted_chains(llm, settings, update, state["question"], samples, temperature)
        _, agreeing = majority(answers)
        sentences = rationale_sentences(out["final_content"])[:max_sentences]
        if agreeing >= threshold or not sentences:
            return out
        note = f"consistency {agreeing}/{samples} below {threshold}: rationale verified and edited"
        return {**out, "cot": sentences, "warnings": [*out["warnings"], note]}

    def verify(state: MethodState, settings: BaselineSettings) -> StepBody:
        passages, edited = list(state["passages"]), []
        # A call's round is the number of the sentence it verifies.
        for i, sentence in enumerate(state.get("cot") or [], start=1):
            prompt = VE_QUESTION_PROMPT.format(sentence=sentence)
            reply = yield Generate.prompt(prompt, stop=["\n"], step="verifying_question", round=i)
            question = " ".join(reply.split()) or sentence
            (docs,) = yield Retrieve([question], k=1, round=i)
            if not docs:
                edited.append(sentence)
                continue
            doc = Document(page_content=docs[0]["page_content"], metadata=docs[0]["metadata"])
            facts_text = select_facts(question, passage_text(doc), facts)
            prompt = VE_ANSWER_PROMPT.format(facts=facts_text, question=question)
            reply = yield Generate.prompt(prompt, stop=["\n"], step="edited_sentence", round=i)
            edited.append(" ".join(reply.split()) or sentence)
            passages = merge_passages(passages, docs[:1])
        return {"passages": passages, "cot": edited, "rounds": 1 + len(state.get("cot") or [])}

    def answer(state: MethodState, settings: BaselineSettings) -> StepBody:
        rationale = " ".join(state.get("cot") or [])
        prompt = VE_FINAL_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[settings.task],
            examples=cot_examples(settings.task),
            question=settings.question(state["question"]),
            rationale=rationale,
        )
        reply = yield Generate.prompt(prompt, stop=["\nQ:"])
        out = finish(f"{rationale} So the answer is: {reply.strip()}", state["warnings"], settings.task)
        if not out["answer"]:  # keep the vote's answer when the edited chain states none
            out["answer"] = state["answer"]
        return out

    def route(state: MethodState) -> Literal["verify_rationale", "__end__"]:
        return "verify_rationale" if state.get("cot") else "__end__"

    builder = graph_builder()
    builder.add_node(
        "cot_sc", driver.node("cot_sc", vote, starts_run=True, opens_round=True), retry_policy=retry_policy
    )
    builder.add_node("verify_rationale", driver.node("verify_rationale", verify), retry_policy=retry_policy)
    builder.add_node("edited_answer", driver.node("edited_answer", answer), retry_policy=retry_policy)
    builder.add_edge(START, "cot_sc")
    builder.add_conditional_edges("cot_sc", route, ["verify_rationale", END])
    builder.add_edge("verify_rationale", "edited_answer")
    builder.add_edge("edited_answer", END)
    return compile_graph(builder, checkpointer, name)
