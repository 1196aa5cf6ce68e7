"""ReAct (Yao et al., ICLR 2023) on LangChain's own agent, ``langchain.agents.create_agent``.

This is how LangChain users do ReAct: the chat model calls a ``search`` tool (its reasoning is the
text around the call, the tool's result is the observation) until it replies without a call. The
tool wraps the harness's retriever and returns the top-1 passage (at most
:data:`~searchain_graph.evaluation.baselines.react.OBSERVATION_CHARS` characters), with the passage
as the tool message's artifact. ``ModelCallLimitMiddleware`` ends a run after ``max_steps`` model
calls; a run that ends there or without an answer backs off to CoT-SC, as the text ReAct does
(Table 1's "React→CoT-SC").

The model must take tools (``bind_tools``): OpenAI-compatible models do, and so does
:class:`~searchain_graph.llms.chat_model.TransformersChatModel` through its chat template or a
text protocol (:mod:`~searchain_graph.llms.tool_calls`). A model that never calls the tool gives
a closed-book answer here; :func:`~searchain_graph.evaluation.baselines.create_react_graph` is the
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
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime
from langgraph.types import RetryPolicy

from searchain_graph.evaluation.baselines.common import MethodOutput, MethodState, _merge, final_answer
from searchain_graph.evaluation.baselines.driver import _builder, _compile, _config, _Methods
from searchain_graph.evaluation.baselines.prompts import BASELINE_ANSWER_FORMATS
from searchain_graph.evaluation.baselines.prompts_more import REACT_AGENT_PROMPT, REACT_AGENT_TOOL, REACT_NO_PASSAGE
from searchain_graph.evaluation.baselines.react import OBSERVATION_CHARS, _check_steps, cot_sc_backoff
from searchain_graph.ir.corpus import passage_text
from searchain_graph.method.calls import count_usage, doc_dict, message_text
from searchain_graph.method.graph import Step
from searchain_graph.method.state import DocumentDict, InputState, Usage

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
) -> CompiledStateGraph[MethodState, None, InputState, MethodOutput]:
    """ReAct on ``langchain.agents.create_agent`` with a search tool, backing off to CoT-SC.

    The ``react_agent`` node runs the agent (its model and tool calls nest under it in traces)
    with :data:`REACT_AGENT_PROMPT` as the system prompt and the question as the user message, at
    most ``max_steps`` model calls. Its last reply without a tool call is the answer; when the
    limit ends the run, or the reply states no answer, ``cot_sc_backoff`` samples
    ``backoff_samples`` CoT chains and votes (0: no backoff).

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
    _check_steps(max_steps, backoff_samples, temperature)
    if type(llm).bind_tools is BaseChatModel.bind_tools:
        raise TypeError(f"{type(llm).__name__} has no bind_tools: use create_react_graph (text ReAct) instead")
    methods = _Methods(name, llm, task=task, max_question_chars=max_question_chars, retriever=retriever)
    system = REACT_AGENT_PROMPT.format(answer_format=BASELINE_ANSWER_FORMATS[methods.task])
    agent = create_agent(
        llm,
        [search_tool(retriever)],
        system_prompt=system,
        middleware=[ModelCallLimitMiddleware(run_limit=max_steps, exit_behavior="end")],
        name=f"{name}_agent",
    )

    def request(state: MethodState) -> tuple[dict[str, Any], Any, RunnableConfig]:
        start = methods.start(state)
        config = _config("react_agent", 1, name)
        config["recursion_limit"] = 4 * max_steps + 10
        return start, {"messages": [HumanMessage(methods.question(start["question"]))]}, config

    def settle(start: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
        messages: list[BaseMessage] = list(result["messages"])
        replies = [i for i, m in enumerate(messages) if isinstance(m, AIMessage)]
        limited = len(replies) > max_steps  # the middleware's "limits exceeded" message is not a reply
        if limited:
            messages = messages[: replies[-1]]
        usage: Usage = start["usage"]
        passages, searches = list(start["passages"]), 0
        for i, m in enumerate(messages):
            if isinstance(m, AIMessage):
                usage = count_usage(usage, [SystemMessage(system), *messages[:i]], m)
            elif isinstance(m, ToolMessage):
                searches += 1
                passages = _merge(passages, list(m.artifact or []))
        usage = {**usage, "retrieval_calls": usage["retrieval_calls"] + searches}
        last = messages[-1] if messages else None
        done = isinstance(last, AIMessage) and not last.tool_calls and not limited
        answer = final_answer(message_text(last), methods.task) if done and last is not None else ""
        content = _trajectory(messages)
        out = {**start, "usage": usage, "passages": passages, "rounds": searches, "final_content": content}
        if answer and not searches:
            out["warnings"] = [*start["warnings"], "the agent answered without calling the search tool"]
        return {**out, "answer": answer, "pending": not answer}

    def run(state: MethodState, runtime: Runtime[Any]) -> dict[str, Any]:
        start, inputs, config = request(state)
        return settle(start, agent.invoke(inputs, config=config))

    async def arun(state: MethodState, runtime: Runtime[Any]) -> dict[str, Any]:
        start, inputs, config = request(state)
        return settle(start, await agent.ainvoke(inputs, config=config))

    unfinished = f"the agent stated no answer (at most {max_steps} model calls)"
    backoff = cot_sc_backoff(methods, unfinished, backoff_samples, temperature)

    def route(state: MethodState) -> Literal["cot_sc_backoff", "__end__"]:
        return "cot_sc_backoff" if state.get("pending") else "__end__"

    builder = _builder()
    builder.add_node("react_agent", Step("react_agent", run, arun), retry_policy=retry_policy)
    builder.add_node("cot_sc_backoff", methods.node(backoff, "cot_sc_backoff"), retry_policy=retry_policy)
    builder.add_edge(START, "react_agent")
    builder.add_conditional_edges("react_agent", route, ["cot_sc_backoff", END])
    builder.add_edge("cot_sc_backoff", END)
    return _compile(builder, checkpointer, name)
