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
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import (
    ANSWER_LABEL,
    MethodState,
    cot_answer,
    merge_passages,
    render_examples,
    render_paragraph,
    render_paragraphs,
    split_sentences,
)
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
    DIRECT_RETRIEVAL_EXAMPLE,
    IRCOT_EXAMPLE,
    IRCOT_READER_PROMPT,
    IRCOT_REASON_PROMPT,
    PARAGRAPH_SEPARATOR,
)
from searchain_graph.method.state import DocumentDict
from searchain_graph.method.steps import Generate, Retrieve, StepBody

__all__ = ["AnswerMode", "create_ircot_graph", "first_sentence"]

AnswerMode = Literal["reader", "cot"]

_ANSWER_IS = re.compile(r"\banswer\s+is\b", re.IGNORECASE)


def first_sentence(reply: str, previous: Sequence[str] = ()) -> str:
    """IRCoT's next chain-of-thought sentence: the first new sentence of the reply's first line.

    Leading "A:" labels are dropped, and sentences that repeat ``previous`` (a chat model that
    restates the chain so far) are skipped. Returns "" when the reply has no new sentence.
    """
    line = next((ln for ln in (reply or "").splitlines() if ln.strip()), "")
    line = " ".join(ANSWER_LABEL.sub("", line).split())
    seen = {" ".join(s.split()) for s in previous}
    return next((s for s in split_sentences(line) if s not in seen), "")


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
) -> BaselineGraph:
    r"""IRCoT: interleaving retrieval with chain-of-thought reasoning (Trivedi et al., 2023).

    ``retrieve`` (K paragraphs for the question) then, in turn, ``reason`` (the LLM writes the
    next CoT sentence from the question, the collected paragraphs and the CoT so far; the reply
    is generated with stop sequence "\\n" and cut to its first new sentence) and ``retrieve``
    (K more paragraphs with that sentence as the query; those already held are skipped and
    the oldest are dropped beyond ``max_paragraphs``). The loop ends when a sentence contains
    "answer is", when the model writes no new sentence, or after ``max_steps`` sentences (the
    last one's paragraphs are still retrieved, for the reader). Then ``answer``:

    * ``answer_mode="reader"``: IRCoT's QA reader, a direct QA prompt over the collected
      paragraphs (:data:`~searchain_graph.baselines.prompts.IRCOT_READER_PROMPT`,
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
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings, retriever=retriever, paragraphs=[], cot=[], query=None, done=False)
    answer_format = BASELINE_ANSWER_FORMATS[settings.task]

    def reason_prompt(question: str, paragraphs: Sequence[DocumentDict], cot: Sequence[str]) -> str:
        examples = render_examples(
            settings.task,
            lambda d, q: IRCOT_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(render_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                reasoning=" ".join(d.reasoning),
                answer=cot_answer(d.answer),
            ),
        )
        return IRCOT_REASON_PROMPT.format(
            answer_format=answer_format,
            examples=examples,
            paragraphs=render_paragraphs(paragraphs),
            question=question,
            cot=" ".join(cot),
        ).rstrip()

    def reader_prompt(question: str, paragraphs: Sequence[DocumentDict]) -> str:
        examples = render_examples(
            settings.task,
            lambda d, q: DIRECT_RETRIEVAL_EXAMPLE.format(
                paragraphs=PARAGRAPH_SEPARATOR.join(render_paragraph(t, x) for t, x in d.paragraphs),
                question=q,
                answer=d.answer,
            ),
        )
        return IRCOT_READER_PROMPT.format(
            answer_format=answer_format,
            examples=examples,
            paragraphs=render_paragraphs(paragraphs),
            question=question,
        )

    def retrieve(state: MethodState, settings: BaselineSettings) -> StepBody:
        # A new run retrieves with the question (the driver reset ``query``), then with each sentence.
        query = state.get("query") or state["question"]
        (docs,) = yield Retrieve([query], k=k)
        warnings = list(state["warnings"])
        if not docs:
            warnings.append(f"round {state['rounds']}: no paragraph retrieved for {query[:80]!r}")
        paragraphs = merge_passages(state.get("paragraphs") or [], docs)
        dropped = len(paragraphs) - max_paragraphs
        if dropped > 0:
            paragraphs = paragraphs[dropped:]
        return {
            "paragraphs": paragraphs,
            "passages": merge_passages(state["passages"], paragraphs),
            "query": None,
            "warnings": warnings,
        }

    def reason(state: MethodState, settings: BaselineSettings) -> StepBody:
        cot = list(state.get("cot") or [])
        step = len(cot) + 1
        prompt = reason_prompt(settings.question(state["question"]), state.get("paragraphs") or [], cot)
        text = yield Generate.prompt(prompt, stop=["\n"])
        sentence = first_sentence(text, cot)
        warnings = list(state["warnings"])
        if not sentence:
            warnings.append(f"step {step}: the model wrote no new sentence; the chain ends here")
            return {"warnings": warnings, "done": True, "query": None}
        cot.append(sentence)
        done = bool(_ANSWER_IS.search(sentence))
        if not done and step >= max_steps:
            warnings.append(f"stopped at max_steps={max_steps} before the chain stated an answer")
        return {"cot": cot, "warnings": warnings, "done": done, "query": None if done else sentence}

    def answer(state: MethodState, settings: BaselineSettings) -> StepBody:
        cot = list(state.get("cot") or [])
        warnings = list(state["warnings"])
        if answer_mode == "cot":
            if cot and _ANSWER_IS.search(cot[-1]):
                return {**finish(" ".join(cot), warnings, settings.task), "query": None}
            warnings.append("the chain of thought states no answer; the reader answers instead")
        text = yield Generate.prompt(reader_prompt(settings.question(state["question"]), state.get("paragraphs") or []))
        if not text.strip():
            warnings.append("the LLM returned empty output")
        return {**finish(text, warnings, settings.task), "query": None}

    def after_reason(state: MethodState) -> Literal["retrieve", "answer"]:
        return "retrieve" if state.get("query") and not state.get("done") else "answer"

    def after_retrieve(state: MethodState) -> Literal["reason", "answer"]:
        return "answer" if len(state.get("cot") or []) >= max_steps else "reason"

    builder = graph_builder()
    builder.add_node(
        "retrieve",
        driver.node("retrieve", retrieve, starts_run=True, continues_after=("reason",), opens_round=True),
        retry_policy=retry_policy,
    )
    builder.add_node("reason", driver.node("reason", reason), retry_policy=retry_policy)
    builder.add_node("answer", driver.node("answer", answer), retry_policy=retry_policy)
    builder.add_edge(START, "retrieve")
    builder.add_conditional_edges("retrieve", after_retrieve, ["reason", "answer"])
    builder.add_conditional_edges("reason", after_reason, ["retrieve", "answer"])
    builder.add_edge("answer", END)
    return compile_graph(builder, checkpointer, name)
