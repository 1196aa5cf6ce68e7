"""Baselines that decompose the question without retrieval: Least-to-Most and Self-Ask w/o IR.

* :func:`create_least_to_most_graph`: Least-to-Most prompting (Zhou et al., ICLR 2023): one call
  decomposes the question into sub-questions ("To answer the question ..., we need to know: ..."),
  then one call per sub-question answers it after the ones already answered, and a last call
  answers the question itself;
* :func:`create_self_ask_no_ir_graph`: Self-Ask without a search engine (Press et al., 2023): one
  reply in which the model asks its follow-ups and answers them itself.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodState, render_examples, self_ask_example
from searchain_graph.baselines.driver import (
    BaselineGraph,
    BaselineSettings,
    baseline_driver,
    compile_graph,
    finish,
    graph_builder,
    one_node_graph,
)
from searchain_graph.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    LTM_DECOMPOSE_EXAMPLE,
    LTM_DECOMPOSE_PROMPT,
    LTM_SOLVE_EXAMPLE,
    LTM_SOLVE_PROMPT,
    LTM_SOLVED,
    SELF_ASK_NO_IR_PROMPT,
    Demonstration,
)
from searchain_graph.method.steps import Generate, StepBody

__all__ = ["create_least_to_most_graph", "create_self_ask_no_ir_graph", "sub_questions"]

_QUOTED = re.compile(r"[\"“]([^\"”\n]{3,300}?)[\"”]")


def sub_questions(text: str, question: str, limit: int) -> list[str]:
    """The quoted sub-questions of a decomposition reply, in order, without repeats or the question itself."""
    out: list[str] = []
    seen = {" ".join(question.split()).lower()}
    for match in _QUOTED.finditer(text):
        sub = " ".join(match.group(1).split())
        if sub.lower() not in seen:
            seen.add(sub.lower())
            out.append(sub)
    return out[:limit]


def create_least_to_most_graph(
    llm: BaseChatModel,
    *,
    max_sub_questions: int = 4,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "least_to_most",
) -> BaselineGraph:
    """Least-to-Most prompting (Zhou et al., 2023): decompose, then solve from the easiest up.

    ``ltm_decompose`` asks for the sub-questions (quoted, easiest first; the demonstrations use
    the Self-Ask follow-ups of the shared demonstrations); ``ltm_solve`` answers the next one
    with every earlier question and answer in its prompt, and, once all are answered, the
    question itself. A reply with no quoted sub-question goes straight to the question (with a
    warning). LLM calls: 1 + sub-questions + 1, at most ``max_sub_questions`` + 2; ``rounds`` =
    the sub-questions solved.

    Args:
        llm: Any LangChain chat model.
        max_sub_questions: Most sub-questions kept from the decomposition.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` whose
        ``final_content`` lists each sub-question with its answer, then the answer.
    """
    if not isinstance(max_sub_questions, int) or max_sub_questions < 1:
        raise ValueError(f"max_sub_questions must be >= 1, got {max_sub_questions!r}")
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings, steps=[], done=False)
    fmt = BASELINE_ANSWER_FORMATS

    def solved(pairs: Any) -> str:
        return "".join(LTM_SOLVED.format(question=q, answer=a) for q, a in pairs)

    def decompose(state: MethodState, settings: BaselineSettings) -> StepBody:
        question = settings.question(state["question"])
        examples = render_examples(
            settings.task,
            lambda d, q: LTM_DECOMPOSE_EXAMPLE.format(
                question=q, sub_questions=", ".join(f'"{fq}"' for fq, _ in d.follow_ups)
            ),
        )
        text = yield Generate.prompt(LTM_DECOMPOSE_PROMPT.format(examples=examples, question=question))
        subs = sub_questions(text.split("\n\n")[0], question, max_sub_questions)
        warnings = [] if subs else ["the decomposition named no sub-question: the question is answered directly"]
        return {"steps": [{"question": q, "answer": None} for q in subs], "warnings": warnings}

    def solve(state: MethodState, settings: BaselineSettings) -> StepBody:
        steps = [dict(s) for s in state.get("steps") or []]
        todo = next((i for i, s in enumerate(steps) if s["answer"] is None), None)
        target = steps[todo]["question"] if todo is not None else settings.question(state["question"])
        done = [(s["question"], s["answer"]) for s in steps if s["answer"] is not None]

        def render(d: Demonstration, q: str) -> str:
            return LTM_SOLVE_EXAMPLE.format(solved=solved(d.follow_ups), question=q, answer=d.answer)

        prompt = LTM_SOLVE_PROMPT.format(
            answer_format=fmt[settings.task] if todo is None else fmt["multihop"],
            examples=render_examples(settings.task, render),
            solved=solved(done),
            question=target,
        )
        # The call's round is the question it solves: sub-question i is round i, the question the last.
        text = yield Generate.prompt(prompt, stop=["\nQ:"], round=len(done) + 1)
        if todo is not None:
            steps[todo]["answer"] = " ".join(text.split()) or "unknown"
            return {"steps": steps, "rounds": len(done) + 1}
        out = {**finish(text, state["warnings"], settings.task), "steps": steps, "done": True}
        out["final_content"] = (solved(done) + f"Q: {target}\nA: {text.strip()}").strip()
        return out

    def route(state: MethodState) -> Literal["ltm_solve", "__end__"]:
        return "__end__" if state.get("done") else "ltm_solve"

    builder = graph_builder()
    builder.add_node(
        "ltm_decompose", driver.node("ltm_decompose", decompose, starts_run=True), retry_policy=retry_policy
    )
    builder.add_node("ltm_solve", driver.node("ltm_solve", solve), retry_policy=retry_policy)
    builder.add_edge(START, "ltm_decompose")
    builder.add_edge("ltm_decompose", "ltm_solve")
    builder.add_conditional_edges("ltm_solve", route, ["ltm_solve", END])
    return compile_graph(builder, checkpointer, name)


def create_self_ask_no_ir_graph(
    llm: BaseChatModel,
    *,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "self_ask_no_ir",
) -> BaselineGraph:
    """Self-Ask without retrieval (Press et al., 2023): follow-ups and their answers in one reply.

    The Self-Ask demonstrations and format of
    :func:`~searchain_graph.baselines.create_self_ask_graph`, but nothing stops the
    model at "Intermediate answer:": it answers its own follow-ups and ends with "So the final
    answer is: ...". One LLM call, ``rounds`` = 1.

    Args:
        llm: Any LangChain chat model.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node that calls the LLM.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` (the whole
        reply in ``final_content``).
    """
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings)

    def body(state: MethodState, settings: BaselineSettings) -> StepBody:
        prompt = SELF_ASK_NO_IR_PROMPT.format(
            answer_format=BASELINE_ANSWER_FORMATS[settings.task],
            examples=render_examples(settings.task, self_ask_example),
            question=settings.question(state["question"]),
        )
        text = yield Generate.prompt(prompt, stop=["\nQuestion:"], step="self_ask_generation")
        final = re.search(r"final\s+answer\s*(?:is|:)", text, re.IGNORECASE)
        warnings = [] if final else ["the model wrote no final answer; its last line is taken"]
        content = text[final.start() :] if final else (text.strip().splitlines() or [""])[-1]
        return {**finish(content, warnings, settings.task), "final_content": text.strip()}

    return one_node_graph(
        driver, "self_ask_no_ir", body, retry_policy=retry_policy, checkpointer=checkpointer, name=name
    )
