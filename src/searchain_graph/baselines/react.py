"""ReAct (Yao et al., ICLR 2023) in its text format, with the SearChain paper's CoT-SC backoff.

The model writes "Thought n:" and "Action n:" lines (generation stops before "Observation");
``Search[query]`` retrieves the top-1 passage, shown as "Observation n:", and ``Finish[answer]``
ends the run. Yao et al.'s Wikipedia API also had ``Lookup[keyword]`` (a sentence of the current
page); a passage retriever returns no pages, so the action is left out, as their own setups
without the API do. The SearChain paper's Table 1 row is "React→CoT-SC": when ReAct does not
finish within ``max_steps`` steps it backs off to CoT-SC (ReAct's own ReAct→CoT-SC heuristic),
here with :func:`~searchain_graph.baselines.create_cot_sc_graph`'s prompt and vote.

For chat models with tool calling,
:func:`~searchain_graph.baselines.create_react_agent_graph` builds ReAct on LangChain's
own agent instead.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodState, final_answer, merge_passages, render_examples
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
    REACT_EXAMPLE,
    REACT_FINISH_HINT,
    REACT_NO_PASSAGE,
    REACT_OBSERVATION,
    REACT_PROMPT,
    REACT_STEP,
    Demonstration,
)
from searchain_graph.baselines.voting import voted_chains
from searchain_graph.ir.corpus import passage_text
from searchain_graph.method.steps import Generate, Retrieve, StepBody, StepFunction

__all__ = ["check_steps", "cot_sc_backoff", "create_react_graph", "parse_react_step"]

_ACTION = re.compile(r"action\s*\d*\s*:\s*(?P<kind>search|finish)\s*\[(?P<arg>[^\]\n]*)\]?", re.IGNORECASE)
_THOUGHT = re.compile(r"^\s*(?:thought\s*\d*\s*:)?\s*(?P<t>.*?)\s*(?=action\s*\d*\s*:|$)", re.IGNORECASE | re.DOTALL)
OBSERVATION_CHARS = 600
"""Most characters of a passage shown as an observation (what goes to the LLM stays bounded)."""
INVALID_ACTION = "Invalid action. Use Search[query] or Finish[answer]."
"""The observation of a reply with no valid action (Yao et al.'s code answers such a step the same way)."""


def parse_react_step(text: str) -> tuple[str, str | None, str]:
    """``(thought, action, argument)`` of a ReAct reply; ``action`` is ``"search"``, ``"finish"`` or ``None``."""
    action = _ACTION.search(text)
    head = text[: action.start()] if action else text
    thought_match = _THOUGHT.match(head)
    thought = " ".join((thought_match.group("t") if thought_match else head).split())
    if action is None:
        return thought, None, ""
    return thought, action.group("kind").lower(), " ".join(action.group("arg").split())


def _steps(pad: list[str] | None) -> int:
    """Thought-action steps in a scratchpad (each step is a "Thought n:" entry; observations follow)."""
    return sum(1 for entry in pad or [] if entry.startswith("Thought "))


def _demo_steps(d: Demonstration) -> str:
    lines, n = [], 1
    for (fq, _), (title, text) in zip(d.follow_ups, d.paragraphs + d.paragraphs[-1:] * 4, strict=False):
        lines.append(REACT_STEP.format(n=n, thought=f"I need to find out: {fq}", action=f"Search[{fq}]"))
        lines.append(REACT_OBSERVATION.format(n=n, observation=f"{title}: {text}"))
        n += 1
    last = d.reasoning[-1] if d.reasoning else ""
    lines.append(REACT_STEP.format(n=n, thought=f"{last} So the answer is {d.answer}.", action=f"Finish[{d.answer}]"))
    return "".join(lines).rstrip()


def check_steps(max_steps: int, backoff_samples: int, temperature: float) -> None:
    """ReAct's settings (both forms): at least one step, a backoff that can sample."""
    if not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
    if backoff_samples < 0 or (backoff_samples > 1 and temperature <= 0):
        raise ValueError("backoff_samples must be >= 0, and temperature > 0 when it is above 1")


def cot_sc_backoff(llm: BaseChatModel, unfinished: str, samples: int, temperature: float) -> StepFunction:
    """The step of ReAct's backoff: CoT-SC with ``samples`` chains after the trajectory (0: none).

    The trajectory is the state's ``final_content``, else its ``cot`` lines; ``unfinished`` is the
    warning. ``llm`` decides whether the sampled chains get a ``seed``.
    """

    def backoff(state: MethodState, settings: BaselineSettings) -> StepBody:
        trajectory = (state.get("final_content") or "".join(state.get("cot") or [])).strip()
        if samples == 0:
            return {"warnings": [*state["warnings"], unfinished], "final_content": trajectory, "answer": ""}
        update = {"warnings": [*state["warnings"], f"{unfinished}: backed off to CoT-SC"]}
        out, _ = yield from voted_chains(llm, settings, update, state["question"], samples, temperature)
        out["final_content"] = f"{trajectory}\n\n{out['final_content']}".strip()
        return out

    return backoff


def create_react_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    *,
    max_steps: int = 7,
    backoff_samples: int = 5,
    temperature: float = 0.7,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "react",
) -> BaselineGraph:
    """ReAct in text format (Yao et al., 2023), backing off to CoT-SC ("React→CoT-SC", Table 1).

    ``react_step`` asks for the next thought and action; ``react_search`` adds the action's
    observation: the top-1 passage retrieved for a ``Search[...]`` (at most ``OBSERVATION_CHARS``
    characters). ``Finish[answer]`` ends the run. A reply with no valid action gets the
    observation "Invalid action" (:data:`INVALID_ACTION`, no retrieval) and counts as a step, as
    in Yao et al.'s code. After ``max_steps`` steps without ``Finish`` (Yao et al. used 7 on
    HotpotQA), the run backs off to CoT-SC with ``backoff_samples`` chains (0: no backoff, the
    answer is then empty).

    Args:
        llm: Any LangChain chat model.
        retriever: Any LangChain retriever; its first document is the observation.
        max_steps: Most thought-action steps.
        backoff_samples: CoT-SC chains of the backoff (0 turns the backoff off).
        temperature: Sampling temperature of the backoff chains.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM and the retriever.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = the searches made and ``final_content`` the ReAct trajectory.
    """
    check_steps(max_steps, backoff_samples, temperature)
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings, retriever=retriever, cot=[], query=None, done=False)
    fmt = BASELINE_ANSWER_FORMATS

    def step(state: MethodState, settings: BaselineSettings) -> StepBody:
        pad = list(state.get("cot") or [])
        n = _steps(pad) + 1
        prompt = REACT_PROMPT.format(
            answer_format=fmt[settings.task],
            examples=render_examples(
                settings.task, lambda d, q: REACT_EXAMPLE.format(question=q, steps=_demo_steps(d))
            ),
            question=settings.question(state["question"]),
            scratchpad="".join(pad) + REACT_FINISH_HINT.format(n=n),
        )
        # ``rounds`` counts the searches; a call's round is its step's number.
        text = yield Generate.prompt(prompt, stop=["\nObservation"], round=n)
        thought, action, arg = parse_react_step(text)
        if action == "finish" and arg:
            pad.append(REACT_STEP.format(n=n, thought=thought, action=f"Finish[{arg}]"))
            out = {**finish(arg, state["warnings"], settings.task), "cot": pad, "query": None, "done": True}
            out["answer"] = final_answer(arg, settings.task) or arg
            out["final_content"] = "".join(pad).strip()
            return out
        if action == "search" and arg:
            pad.append(REACT_STEP.format(n=n, thought=thought, action=f"Search[{arg}]"))
            return {"cot": pad, "query": arg, "done": False}
        pad.append(REACT_STEP.format(n=n, thought=thought, action=(text.strip().splitlines() or [""])[-1][:200]))
        return {"cot": pad, "query": None, "done": False}

    def search(state: MethodState, settings: BaselineSettings) -> StepBody:
        pad = list(state.get("cot") or [])
        n = _steps(pad)
        query = state.get("query")
        if not query:  # the step's reply had no valid action
            return {"cot": [*pad, REACT_OBSERVATION.format(n=n, observation=INVALID_ACTION)]}
        (docs,) = yield Retrieve([query], k=1, round=n)
        if docs:
            doc = Document(page_content=docs[0]["page_content"], metadata=docs[0]["metadata"])
            observation = " ".join(passage_text(doc).split())[:OBSERVATION_CHARS]
        else:
            observation = REACT_NO_PASSAGE
        pad.append(REACT_OBSERVATION.format(n=n, observation=observation))
        return {
            "cot": pad,
            "query": None,
            "rounds": state["rounds"] + 1,
            "passages": merge_passages(state["passages"], docs[:1]),
        }

    backoff = cot_sc_backoff(llm, f"ReAct did not finish in {max_steps} steps", backoff_samples, temperature)

    def route(state: MethodState) -> Literal["react_search", "__end__"]:
        return "__end__" if state.get("done") else "react_search"

    def after_search(state: MethodState) -> Literal["react_step", "cot_sc_backoff"]:
        return "cot_sc_backoff" if _steps(state.get("cot")) >= max_steps else "react_step"

    # Every action but Finish goes through react_search (its observation), so react_step never
    # follows itself: after react_search it continues the run, after anything else it starts one.
    builder = graph_builder()
    builder.add_node(
        "react_step",
        driver.node("react_step", step, starts_run=True, continues_after=("react_search",)),
        retry_policy=retry_policy,
    )
    builder.add_node("react_search", driver.node("react_search", search), retry_policy=retry_policy)
    builder.add_node("cot_sc_backoff", driver.node("cot_sc_backoff", backoff), retry_policy=retry_policy)
    builder.add_edge(START, "react_step")
    builder.add_conditional_edges("react_step", route, ["react_search", END])
    builder.add_conditional_edges("react_search", after_search, ["react_step", "cot_sc_backoff"])
    builder.add_edge("cot_sc_backoff", END)
    return compile_graph(builder, checkpointer, name)
