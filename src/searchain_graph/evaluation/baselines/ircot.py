"""IRCoT: interleaving retrieval with chain-of-thought reasoning (Trivedi et al., 2023).

K paragraphs are retrieved with the question, then the graph alternates one chain-of-thought
sentence (``reason``: the first new sentence of the reply, see :func:`first_sentence`) and K
more paragraphs retrieved with that sentence (``retrieve``), keeping at most
``max_paragraphs`` (the oldest are dropped). It stops at a sentence containing "answer is", at
an empty sentence, or after ``max_steps`` sentences. The answer (``answer``) is then read by a
direct QA prompt over the collected paragraphs (IRCoT's "Direct Prompting" reader,
``answer_mode="reader"``) or parsed from the chain of thought (``answer_mode="cot"``, which
falls back to reading when the chain states no answer).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import RetryPolicy

from searchain_graph.evaluation.baselines.common import (
    _LABEL,
    MethodOutput,
    MethodState,
    _cot_answer,
    _examples,
    _merge,
    _paragraph,
    _paragraphs,
    _sentences,
)
from searchain_graph.evaluation.baselines.driver import _builder, _compile, _Methods, _Node
from searchain_graph.evaluation.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    DIRECT_RETRIEVAL_EXAMPLE,
    IRCOT_EXAMPLE,
    IRCOT_READER_PROMPT,
    IRCOT_REASON_PROMPT,
    PARAGRAPH_SEPARATOR,
)
from searchain_graph.method.state import DocumentDict, InputState

__all__ = ["AnswerMode", "create_ircot_graph", "first_sentence"]

AnswerMode = Literal["reader", "cot"]

_ANSWER_IS = re.compile(r"\banswer\s+is\b", re.IGNORECASE)


def first_sentence(reply: str, previous: Sequence[str] = ()) -> str:
    """IRCoT's next chain-of-thought sentence: the first new sentence of the reply's first line.

    Leading "A:" labels are dropped, and sentences that repeat ``previous`` (a chat model that
    restates the chain so far) are skipped. Returns "" when the reply has no new sentence.
    """
    line = next((ln for ln in (reply or "").splitlines() if ln.strip()), "")
    line = " ".join(_LABEL.sub("", line).split())
    seen = {" ".join(s.split()) for s in previous}
    return next((s for s in _sentences(line) if s not in seen), "")


def create_ircot_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    *,
    k: int = 4,
    max_steps: int = 6,
    max_paragraphs: int = 15,
    task: str = "multihop",
    answer_mode: AnswerMode = "reader",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "ircot",
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    r"""IRCoT: interleaving retrieval with chain-of-thought reasoning (Trivedi et al., 2023).

    ``retrieve`` (K paragraphs for the question) then, in turn, ``reason`` (the LLM writes the
    next CoT sentence from the question, the collected paragraphs and the CoT so far; the reply
    is generated with stop sequence "\\n" and cut to its first new sentence) and ``retrieve``
    (K more paragraphs with that sentence as the query; those already held are skipped and
    the oldest are dropped beyond ``max_paragraphs``). The loop ends when a sentence contains
    "answer is", when the model writes no new sentence, or after ``max_steps`` sentences (the
    last one's paragraphs are still retrieved, for the reader). Then ``answer``:

    * ``answer_mode="reader"``: IRCoT's QA reader, a direct QA prompt over the collected
      paragraphs (:data:`~searchain_graph.evaluation.baselines.prompts.IRCOT_READER_PROMPT`,
      IRCoT's "Direct Prompting" reader); ``final_content`` is its reply.
    * ``answer_mode="cot"``: the answer stated by the chain of thought ("So the answer is:
      X"), no further LLM call; ``final_content`` is the whole chain. A chain that states no
      answer falls back to the reader, with a warning.

    Args:
        llm: Any LangChain chat model; it reasons and (``reader`` mode) answers.
        retriever: Any LangChain retriever; called with ``k=k`` when it accepts it, its result
            cut to ``k`` either way.
        k: Paragraphs retrieved per step (IRCoT's K, 2-8 in its paper).
        max_steps: Most CoT sentences.
        max_paragraphs: Most paragraphs shown to the LLM (15 in IRCoT's paper).
        task: The task family (see :func:`create_cot_graph`).
        answer_mode: ``"reader"`` or ``"cot"`` (see above).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM or the retriever.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = the retrieval calls (1 + the sentences used as queries) and ``passages``
        every paragraph the LLM was shown.
    """
    for label, value in (("k", k), ("max_steps", max_steps), ("max_paragraphs", max_paragraphs)):
        if value < 1:
            raise ValueError(f"{label} must be >= 1, got {value!r}")
    if answer_mode not in ("reader", "cot"):
        raise ValueError(f"answer_mode must be 'reader' or 'cot', got {answer_mode!r}")
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars, retriever=retriever)
    answer_format = BASELINE_ANSWER_FORMATS[methods.task]

    def reason_prompt(question: str, paragraphs: Sequence[DocumentDict], cot: Sequence[str]) -> str:
        examples = _examples(
            methods.task,
            lambda d, q: IRCOT_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                reasoning=" ".join(d.reasoning),
                answer=_cot_answer(d.answer),
            ),
        )
        return IRCOT_REASON_PROMPT.format(
            answer_format=answer_format,
            examples=examples,
            paragraphs=_paragraphs(paragraphs),
            question=question,
            cot=" ".join(cot),
        ).rstrip()

    def reader_prompt(question: str, paragraphs: Sequence[DocumentDict]) -> str:
        examples = _examples(
            methods.task,
            lambda d, q: DIRECT_RETRIEVAL_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                answer=d.answer,
            ),
        )
        return IRCOT_READER_PROMPT.format(
            answer_format=answer_format, examples=examples, paragraphs=_paragraphs(paragraphs), question=question
        )

    def retrieve(state: MethodState) -> _Node:
        fresh = not state.get("pending")
        update = methods.start(state, paragraphs=[], cot=[], query=None, done=False) if fresh else {}
        current = cast(MethodState, {**state, **update})
        query = current["question"] if fresh else (current.get("query") or current["question"])
        rnd = int(current["rounds"]) + 1
        docs, usage = yield from methods.retrieve(current["usage"], query, k, rnd)
        warnings = list(current["warnings"])
        if not docs:
            warnings.append(f"round {rnd}: no paragraph retrieved for {query[:80]!r}")
        paragraphs = _merge(current.get("paragraphs") or [], docs)
        dropped = len(paragraphs) - max_paragraphs
        if dropped > 0:
            paragraphs = paragraphs[dropped:]
        return {
            **update,
            "usage": usage,
            "rounds": rnd,
            "paragraphs": paragraphs,
            "passages": _merge(current["passages"], paragraphs),
            "query": None,
            "warnings": warnings,
        }

    def reason(state: MethodState) -> _Node:
        cot = list(state.get("cot") or [])
        step = len(cot) + 1
        prompt = reason_prompt(methods.question(state["question"]), state.get("paragraphs") or [], cot)
        text, usage = yield from methods.generate(state["usage"], prompt, "reason", state["rounds"], ["\n"])
        sentence = first_sentence(text, cot)
        warnings = list(state["warnings"])
        if not sentence:
            warnings.append(f"step {step}: the model wrote no new sentence; the chain ends here")
            return {"usage": usage, "warnings": warnings, "done": True, "query": None}
        cot.append(sentence)
        done = bool(_ANSWER_IS.search(sentence))
        if not done and step >= max_steps:
            warnings.append(f"stopped at max_steps={max_steps} before the chain stated an answer")
        return {"usage": usage, "cot": cot, "warnings": warnings, "done": done, "query": None if done else sentence}

    def answer(state: MethodState) -> _Node:
        cot = list(state.get("cot") or [])
        chain = " ".join(cot)
        warnings = list(state["warnings"])
        usage = state["usage"]
        if answer_mode == "cot":
            if cot and _ANSWER_IS.search(cot[-1]):
                return methods.finish({"usage": usage}, chain, warnings, query=None)
            warnings.append("the chain of thought states no answer; the reader answers instead")
        prompt = reader_prompt(methods.question(state["question"]), state.get("paragraphs") or [])
        text, usage = yield from methods.generate(usage, prompt, "answer", state["rounds"])
        if not text.strip():
            warnings.append("the LLM returned empty output")
        return methods.finish({"usage": usage}, text, warnings, query=None)

    def after_reason(state: MethodState) -> Literal["retrieve", "answer"]:
        return "retrieve" if state.get("query") and not state.get("done") else "answer"

    def after_retrieve(state: MethodState) -> Literal["reason", "answer"]:
        return "answer" if len(state.get("cot") or []) >= max_steps else "reason"

    builder = _builder()
    builder.add_node("retrieve", methods.node(retrieve, "retrieve"), retry_policy=retry_policy)
    builder.add_node("reason", methods.node(reason, "reason"), retry_policy=retry_policy)
    builder.add_node("answer", methods.node(answer, "answer"), retry_policy=retry_policy)
    builder.add_edge(START, "retrieve")
    builder.add_conditional_edges("retrieve", after_retrieve, ["reason", "answer"])
    builder.add_conditional_edges("reason", after_reason, ["retrieve", "answer"])
    builder.add_edge("answer", END)
    return _compile(builder, checkpointer, name)
