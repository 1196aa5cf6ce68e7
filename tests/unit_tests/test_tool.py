"""SearChain as an agent's tool: the answer in the ToolMessage, the tree in its artifact."""

from __future__ import annotations

import json
from collections.abc import Sequence

from langchain.agents import create_agent
from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from searchain_graph import create_searchain_graph, searchain_tool
from tests.fakes import QUESTION, TREE_READS, ScriptedReader, retriever, tree_llm
from tests.unit_tests.test_react_agent import ToolRuleModel


def agent_llm() -> ToolRuleModel:
    """Asks the SearChain tool once, then answers from what it returned."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        seen = [m for m in messages if isinstance(m, ToolMessage)]
        if seen:
            return "The buses leave from " + seen[-1].text.splitlines()[0].removeprefix("Answer: ") + "."
        call = {"name": "searchain", "arguments": {"question": QUESTION}}
        return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"

    return ToolRuleModel(respond=respond)


def test_the_tool_answers_an_agent_with_the_answer_and_keeps_the_tree_aside() -> None:
    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS))
    tool = searchain_tool(graph)
    agent = create_agent(agent_llm(), tools=[tool])
    out = agent.invoke({"messages": [HumanMessage(QUESTION)]})
    result = next(m for m in out["messages"] if isinstance(m, ToolMessage))
    assert result.text.startswith("Answer: Toronto Coach Terminal\n") and "[1]" in result.text
    assert "Sources: [1] " in result.text
    full = graph.invoke({"question": QUESTION})
    assert len(result.text) < len(json.dumps(full)) / 5  # the agent's context gets the answer, not the tree
    assert result.artifact["tree"] == full["tree"] and result.artifact["references"] == full["references"]
    assert out["messages"][-1].text == "The buses leave from Toronto Coach Terminal."


async def test_the_tool_runs_async_too() -> None:
    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(TREE_READS))
    message = await searchain_tool(graph, name="multi_hop").ainvoke(
        {"type": "tool_call", "id": "1", "name": "multi_hop", "args": {"question": QUESTION}}
    )
    assert message.name == "multi_hop" and message.text.startswith("Answer: Toronto Coach Terminal")
    assert message.artifact["rounds"] == 3
