"""Self-Ask with a search engine (Press et al., 2023) as a LangGraph graph.

The LLM asks follow-up questions one at a time (``self_ask_generation``); each is answered from
its top-1 retrieved passage (``follow_up``): with the reader's *g* when a reader is given and
*g* is non-empty (the closest analogue of the search engine's answer box that Press et al.
used), otherwise by the LLM reading that passage
(:data:`~searchain_graph.baselines.prompts.SELF_ASK_READ_PROMPT`), their snippet
fallback. After ``max_steps`` follow-ups the model is told to answer.

Press et al. prompt a completion model: the search engine's answer is written into the model's own
text, which it continues. A chat model can take it that way when it continues a final assistant
message (``transcript``: the local models do); otherwise each answer comes back in a user turn.
Qwen2.5-Coder-1.5B, given the answer in a user turn, ended with it as the final answer after one
follow-up on each of the 9 HotpotQA questions it was run on; continuing its own transcript, it asked the
next one.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import (
    MethodState,
    final_answer,
    merge_passages,
    render_examples,
    self_ask_example,
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
    SELF_ASK_FORCE_FINAL,
    SELF_ASK_INTERMEDIATE,
    SELF_ASK_NO_PASSAGE,
    SELF_ASK_PROMPT,
    SELF_ASK_READ_PROMPT,
    SELF_ASK_STEP,
)
from searchain_graph.ir.corpus import passage_text
from searchain_graph.ir.readers.base import Reader
from searchain_graph.method.calls import to_messages
from searchain_graph.method.steps import Generate, Read, Retrieve, StepBody

__all__ = ["create_self_ask_graph"]


_FOLLOW_UP = re.compile(r"follow[\s-]*up\s*:\s*(?P<q>[^\n]*)", re.IGNORECASE)
_FINAL = re.compile(r"final\s+answer\s*(?:is|:)", re.IGNORECASE)
_INTERMEDIATE = re.compile(r"intermediate\s+answer\s*:", re.IGNORECASE)
_NEEDED = re.compile(r"^\s*(?:are\s+follow\s+up\s+questions\s+needed\s+here\s*:)?\s*(?:yes|no)\b\.?", re.IGNORECASE)
_SELF_ASK_STOP = ["Intermediate answer:"]
_FORCED = "So the final answer is:"
"""How a transcript is begun after the last allowed follow-up: the model writes only the answer."""


def create_self_ask_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    reader: Reader | None = None,
    *,
    max_steps: int = 5,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "self_ask",
    transcript: bool | None = None,
) -> BaselineGraph:
    """Self-Ask with a search engine (Press et al., 2023).

    The LLM writes "Are follow up questions needed here: Yes. Follow up: ..." (generation
    stops at "Intermediate answer:", and anything after it is cut); the follow-up is answered
    from its top-1 retrieved passage and returned as "Intermediate answer: ...", until the model
    writes "So the final answer is: ...". The answer is returned in the model's own reply, which it
    continues (``transcript``), or in a chat turn. A follow-up is answered:

    * by the reader's *g*, when ``reader`` is given and *g* is non-empty (the analogue of the
      search engine's answer box that Press et al. used);
    * otherwise by the LLM reading the passage
      (:data:`~searchain_graph.baselines.prompts.SELF_ASK_READ_PROMPT`; with no passage
      it answers from its own knowledge), as Press et al. fall back to the snippet.

    After ``max_steps`` follow-ups the last intermediate answer comes with the instruction to
    answer now, so the model is called at most ``max_steps + 1`` times for the chain (plus one
    reading call per follow-up the reader cannot answer). A reply with neither a follow-up nor
    a final answer ends the run, with a warning, its first line taken as the answer.

    Args:
        llm: Any LangChain chat model.
        retriever: Any LangChain retriever; its first document answers a follow-up.
        reader: Optional reader (``read(query, passage)``) that extracts *g* from that passage.
        max_steps: Most follow-up questions.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM, retriever or reader.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.
        transcript: Write each intermediate answer into the model's reply and let it continue
            that reply (one growing assistant message, as Press et al.'s completion prompt), rather
            than send it as a user turn. ``None``: when the chat model continues a final assistant
            message (its ``continues_final_message``; the local models do), else turns.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = the number of follow-ups answered and ``final_content`` the Self-Ask
        transcript ("Follow up:"/"Intermediate answer:" lines and the final reply).
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
    settings = BaselineSettings(task, max_question_chars)
    if transcript is None:
        transcript = bool(getattr(llm, "continues_final_message", False))
    driver = baseline_driver(name, llm, settings, retriever=retriever, reader=reader, messages=[], steps=[], query=None)

    def prompt(question: str) -> str:
        return SELF_ASK_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[settings.task],
            examples=render_examples(settings.task, self_ask_example),
            question=question,
        )

    def transcript_of(steps: Sequence[dict[str, Any]], last: str) -> str:
        lines = [SELF_ASK_STEP.format(question=s["question"], answer=s["answer"]) for s in steps]
        return "\n".join([*lines, last]).strip()

    def said(messages: list[dict[str, str]], reply: str) -> list[dict[str, str]]:
        """The conversation with the model's reply: a new assistant turn, or (``transcript``) the one it continued."""
        if transcript and messages[-1]["role"] == "assistant":
            return [*messages[:-1], {"role": "assistant", "content": messages[-1]["content"] + reply}]
        return [*messages, {"role": "assistant", "content": reply}]

    def answered(messages: list[dict[str, str]], answer: str, last: bool) -> list[dict[str, str]]:
        """The conversation with a follow-up's answer: a user turn, or (``transcript``) the model's reply begun anew."""
        if not transcript:
            template = SELF_ASK_FORCE_FINAL if last else SELF_ASK_INTERMEDIATE
            return [*messages, {"role": "user", "content": template.format(answer=answer)}]
        written = "\n" + SELF_ASK_INTERMEDIATE.format(answer=answer) + "\n" + (_FORCED if last else "")
        return [*messages[:-1], {"role": "assistant", "content": messages[-1]["content"] + written}]

    def generation(state: MethodState, settings: BaselineSettings) -> StepBody:
        # A new run (the driver reset ``messages``) opens the conversation with the prompt.
        messages = list(state.get("messages") or []) or [
            {"role": "user", "content": prompt(settings.question(state["question"]))}
        ]
        steps = list(state.get("steps") or [])
        # ``rounds`` counts the follow-ups answered; this call works towards the next one.
        text = yield Generate.prompt(to_messages(messages), stop=_SELF_ASK_STOP, round=len(steps) + 1)
        # The transcript was begun with "So the final answer is:": read with it, kept once.
        begun = transcript and messages[-1]["content"].endswith(_FORCED)
        if begun:
            text = _FORCED + text
        warnings = list(state["warnings"])
        cut = _INTERMEDIATE.search(text)
        if cut:
            text = text[: cut.start()]
        follow_up, final = _FOLLOW_UP.search(text), _FINAL.search(text)
        forced = len(steps) >= max_steps
        if follow_up and (final is None or follow_up.start() < final.start()) and not forced:
            query = " ".join(follow_up.group("q").split())
            if query:
                reply = text[: follow_up.end()].strip()
                return {
                    "rounds": len(steps),
                    "messages": said(messages, reply),
                    "query": query,
                    "warnings": warnings,
                }
        reply = text.strip()
        if forced and follow_up and not final:
            warnings.append(f"stopped at max_steps={max_steps}: the model still asked a follow up")
        elif not final and not forced:
            warnings.append("the model wrote neither a follow up nor a final answer; its reply is taken as the answer")
        answer_text = reply[final.start() :] if final else (reply if steps else _NEEDED.sub("", reply, count=1))
        return {
            **finish(answer_text, warnings, settings.task),
            "rounds": len(steps),
            "query": None,
            "final_content": transcript_of(steps, reply),
            "messages": said(messages, reply.removeprefix(_FORCED) if begun else reply),
        }

    def follow_up(state: MethodState, settings: BaselineSettings) -> StepBody:
        query = state.get("query") or ""
        steps = list(state.get("steps") or [])
        warnings = list(state["warnings"])
        (docs,) = yield Retrieve([query], k=1)
        doc = docs[0] if docs else None
        passage = passage_text(Document(page_content=doc["page_content"], metadata=doc["metadata"])) if doc else ""
        answer, source = "", "llm"
        if doc is None:
            warnings.append(f"round {state['rounds']}: no passage retrieved for {query[:80]!r}")
        elif reader is not None:
            (read,) = yield Read([(query, doc)])
            answer, source = (str(read.answer).strip(), "reader") if read.answer else ("", "llm")
        if not answer:
            read_prompt = SELF_ASK_READ_PROMPT.format(passage=passage or SELF_ASK_NO_PASSAGE, question=query)
            text = yield Generate.prompt(read_prompt, stop=["\n"], step="follow_up_answer")
            answer = final_answer(text, "multihop") or "unknown"
        answer = " ".join(answer.split())
        steps.append({"question": query, "answer": answer, "source": source, "document": doc})
        return {
            "steps": steps,
            "query": None,
            "passages": merge_passages(state["passages"], [doc] if doc else []),
            "warnings": warnings,
            "messages": answered(list(state.get("messages") or []), answer, len(steps) >= max_steps),
        }

    def route(state: MethodState) -> Literal["follow_up", "__end__"]:
        return "follow_up" if state.get("query") else "__end__"

    builder = graph_builder()
    builder.add_node(
        "self_ask_generation",
        driver.node("self_ask_generation", generation, starts_run=True, continues_after=("follow_up",)),
        retry_policy=retry_policy,
    )
    # A follow-up answered is a round: the driver numbers it and counts it in ``rounds``.
    builder.add_node("follow_up", driver.node("follow_up", follow_up, opens_round=True), retry_policy=retry_policy)
    builder.add_edge(START, "self_ask_generation")
    builder.add_conditional_edges("self_ask_generation", route, ["follow_up", END])
    builder.add_edge("follow_up", "self_ask_generation")
    return compile_graph(builder, checkpointer, name)
