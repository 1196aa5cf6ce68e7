"""SearChain as an agent's tool: :func:`searchain_tool`.

``graph.as_tool()`` would put the graph's whole output (every round's chain, IR's verdicts, the
passages: kilobytes) into the agent's ``ToolMessage``, and so into every later prompt of the
agent. The tool built here answers with what an agent reads, the answer and the cited final
content, and keeps the rest as the message's *artifact* (``response_format="content_and_artifact"``):
the references with their passages, the Tree-of-Reasoning, the rounds and the usage, which an
application shows or logs without the agent's LLM reading them.

    from langchain.agents import create_agent
    from searchain_graph.method.tool import searchain_tool

    agent = create_agent(chat_model, tools=[searchain_tool(graph)])

A parent graph whose state is ``MessagesState`` adapts the same way: the tool (or the graph) takes
the question from the last human message, as ``create_agent`` does with a tool call.
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import StructuredTool
from pydantic import BaseModel, Field

__all__ = ["DEFAULT_TOOL_DESCRIPTION", "searchain_tool"]

DEFAULT_TOOL_DESCRIPTION = (
    "Answer a factual question that needs several facts looked up in turn (a multi-hop question). "
    "Returns the answer and the steps that support it, each citing its source passage as [n]."
)


class _Question(BaseModel):
    question: str = Field(description="The whole question, in one sentence.")


def _content(out: dict[str, Any]) -> str:
    """What the agent reads: the answer, the cited final content, and the sources' titles."""
    sources = []
    for ref in out.get("references") or []:
        title = ((ref.get("document") or {}).get("metadata") or {}).get("title")
        sources.append(f"[{ref['index']}] {title or ref['query']}")
    lines = [f"Answer: {out.get('answer', '')}", str(out.get("final_content") or "").strip()]
    if sources:
        lines.append("Sources: " + "; ".join(sources))
    return "\n".join(line for line in lines if line)


def _artifact(out: dict[str, Any]) -> dict[str, Any]:
    keys = ("answer", "final_content", "references", "tree", "rounds", "usage", "warnings")
    return {key: out[key] for key in keys if key in out}


def searchain_tool(
    graph: Runnable[Any, Any],
    *,
    name: str = "searchain",
    description: str = DEFAULT_TOOL_DESCRIPTION,
) -> StructuredTool:
    """A LangChain tool that runs the SearChain graph on a question, for agents.

    Args:
        graph: A compiled SearChain graph (:func:`~searchain_graph.method.graph.create_searchain_graph`).
        name: The tool's name, as the agent's LLM sees it.
        description: What the tool does, as the agent's LLM sees it.

    Returns:
        A ``StructuredTool`` with ``response_format="content_and_artifact"``: the ``ToolMessage``'s
        content is the answer, the cited final content and the sources' titles; its ``artifact`` is
        the graph's output without the question (``references``, ``tree``, ``rounds``, ``usage``,
        ``warnings``).
    """

    def run(question: str, config: RunnableConfig) -> tuple[str, dict[str, Any]]:
        out = graph.invoke({"question": question}, config=config)
        return _content(out), _artifact(out)

    async def arun(question: str, config: RunnableConfig) -> tuple[str, dict[str, Any]]:
        out = await graph.ainvoke({"question": question}, config=config)
        return _content(out), _artifact(out)

    return StructuredTool.from_function(
        func=run,
        coroutine=arun,
        name=name,
        description=description,
        args_schema=_Question,
        response_format="content_and_artifact",
    )
