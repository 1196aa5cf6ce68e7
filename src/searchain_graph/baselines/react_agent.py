"""ReAct (Yao et al., ICLR 2023) on LangChain's own agent, ``langchain.agents.create_agent``.

This is how LangChain users do ReAct: the chat model calls a ``search`` tool (its reasoning is the
text around the call, the tool's result is the observation) until it replies without a call. The
tool wraps the harness's retriever and returns the top-1 passage (at most
:data:`~searchain_graph.baselines.react.OBSERVATION_CHARS` characters), with the passage
as the tool message's artifact. ``ModelCallLimitMiddleware`` ends a run after ``max_steps`` model
calls; a run that ends there or without an answer backs off to CoT-SC, as the text ReAct does
(Table 1's "React→CoT-SC").

The model must take tools (``bind_tools``): OpenAI-compatible models do, and so does
:class:`~searchain_graph.llms.chat_model.TransformersChatModel` through its chat template or a
text protocol (:mod:`~searchain_graph.llms.tool_calls`). A model that never calls the tool gives
a closed-book answer here; :func:`~searchain_graph.baselines.create_react_graph` is the
text-format ReAct for such models.
"""

from __future__ import annotations

from typing import Any, Literal

from langchain.agents import create_agent
from langchain.agents.middleware import ModelCallLimitMiddleware
from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodState, final_answer, merge_passages
from searchain_graph.baselines.driver import (
    BaselineGraph,
    BaselineSettings,
    baseline_driver,
    blocking_node,
    compile_graph,
    graph_builder,
)
from searchain_graph.baselines.prompts import (
    BASELINE_ANSWER_FORMATS,
    REACT_AGENT_PROMPT,
    REACT_AGENT_TOOL,
    REACT_NO_PASSAGE,
)
from searchain_graph.baselines.react import OBSERVATION_CHARS, check_steps, cot_sc_backoff
from searchain_graph.ir.corpus import passage_text
from searchain_graph.method.calls import call_usage, doc_dict, message_text, trace_config
from searchain_graph.method.state import DocumentDict, Usage, add_usage, empty_usage

__all__ = ["create_react_agent_graph", "search_tool"]


def _observation(docs: list[Document]) -> tuple[str, list[DocumentDict]]:
    if not docs:
        return REACT_NO_PASSAGE, []
    return " ".join(passage_text(docs[0]).split())[:OBSERVATION_CHARS], [doc_dict(docs[0])]


def search_tool(retriever: BaseRetriever, *, name: str = "search") -> BaseTool:
    """A LangChain tool over ``retriever``: the top-1 passage as text, the passage as the artifact."""

    def search(query: str) -> tuple[str, list[DocumentDict]]:
        return _observation(list(retriever.invoke(query))[:1]) if query.strip() else (REACT_NO_PASSAGE, [])

    async def asearch(query: str) -> tuple[str, list[DocumentDict]]:
        return _observation(list(await retriever.ainvoke(query))[:1]) if query.strip() else (REACT_NO_PASSAGE, [])

    return StructuredTool.from_function(
        func=search, coroutine=asearch, name=name, description=REACT_AGENT_TOOL, response_format="content_and_artifact"
    )


def _trajectory(messages: list[BaseMessage]) -> str:
    lines = []
    for m in messages[1:]:
        text = " ".join(message_text(m).split())
        if isinstance(m, AIMessage):
            lines += [text] if text else []
            lines += [f"Action: {c['name']}[{c['args'].get('query', c['args'])}]" for c in m.tool_calls]
        elif isinstance(m, ToolMessage):
            lines.append(f"Observation: {text}")
    return "\n".join(lines)


def create_react_agent_graph(
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
    name: str = "react_agent",
) -> BaselineGraph:
    """ReAct on ``langchain.agents.create_agent`` with a search tool, backing off to CoT-SC.

    The ``react_agent`` node runs the agent (its model and tool calls nest under it in traces)
    with :data:`REACT_AGENT_PROMPT` as the system prompt and the question as the user message, at
    most ``max_steps`` model calls, and counts the agent's calls in its ``usage`` (under
    ``ainvoke`` the agent runs in a worker thread). Its last reply without a tool call is the
    answer; when the limit ends the run, or the reply states no answer, ``cot_sc_backoff``
    samples ``backoff_samples`` CoT chains and votes (0: no backoff).

    Args:
        llm: A LangChain chat model that implements ``bind_tools``.
        retriever: Any LangChain retriever; the tool returns its first document.
        max_steps: Most model calls of the agent (Yao et al. used 7 steps on HotpotQA).
        backoff_samples: CoT-SC chains of the backoff (0 turns the backoff off).
        temperature: Sampling temperature of the backoff chains.
        task: The task family (see :func:`create_cot_graph`).
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for both nodes.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = the searches made and ``final_content`` the agent's trajectory. Words in count
        the messages each model call was sent (not the tool schema; tokens in do count it).
    """
    check_steps(max_steps, backoff_samples, temperature)
    if type(llm).bind_tools is BaseChatModel.bind_tools:
        raise TypeError(f"{type(llm).__name__} has no bind_tools: use create_react_graph (text ReAct) instead")
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings, retriever=retriever)
    system = REACT_AGENT_PROMPT.format(answer_format=BASELINE_ANSWER_FORMATS[settings.task])
    agent = create_agent(
        llm,
        [search_tool(retriever)],
        system_prompt=system,
        middleware=[ModelCallLimitMiddleware(run_limit=max_steps, exit_behavior="end")],
        name=f"{name}_agent",
    )

    def run_agent(state: MethodState, settings: BaselineSettings) -> dict[str, Any]:
        # The agent calls the model and the tool itself: its calls are this step's usage.
        config = trace_config("react_agent", 1, named=False, searchain_method=name)
        config["recursion_limit"] = 4 * max_steps + 10
        result = agent.invoke({"messages": [HumanMessage(settings.question(state["question"]))]}, config=config)
        messages: list[BaseMessage] = list(result["messages"])
        replies = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
        limited = len(replies) > max_steps  # the middleware's "limits exceeded" message is not a reply
        if limited:
            messages = messages[: replies[-1]]
        usage: Usage = empty_usage()
        passages, searches = list(state["passages"]), 0
        for i, m in enumerate(messages):
            if isinstance(m, AIMessage):
                usage = add_usage(usage, call_usage([SystemMessage(system), *messages[:i]], m))
            elif isinstance(m, ToolMessage):
                searches += 1
                passages = merge_passages(passages, list(m.artifact or []))
        last = messages[-1] if messages else None
        done = isinstance(last, AIMessage) and not last.tool_calls and not limited
        answer = final_answer(message_text(last), settings.task) if done and last is not None else ""
        out = {
            "usage": add_usage(usage, {"retrieval_calls": searches}),
            "passages": passages,
            "rounds": searches,
            "final_content": _trajectory(messages),
            "answer": answer,
        }
        if answer and not searches:
            out["warnings"] = [*state["warnings"], "the agent answered without calling the search tool"]
        return out

    unfinished = f"the agent stated no answer (at most {max_steps} model calls)"
    backoff = cot_sc_backoff(llm, unfinished, backoff_samples, temperature)

    def route(state: MethodState) -> Literal["cot_sc_backoff", "__end__"]:
        return "__end__" if state.get("answer") else "cot_sc_backoff"

    builder = graph_builder()
    builder.add_node(
        "react_agent", blocking_node(driver, "react_agent", run_agent, starts_run=True), retry_policy=retry_policy
    )
    builder.add_node("cot_sc_backoff", driver.node("cot_sc_backoff", backoff), retry_policy=retry_policy)
    builder.add_edge(START, "react_agent")
    builder.add_conditional_edges("react_agent", route, ["cot_sc_backoff", END])
    builder.add_edge("cot_sc_backoff", END)
    return compile_graph(builder, checkpointer, name)
