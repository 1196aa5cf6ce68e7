"""ReAct on LangChain's ``create_agent``, and the text protocol that gives local models tool calls.

The fake model answers by what the conversation holds and writes its tool calls in the text
protocol of :mod:`searchain_graph.llms.tool_calls`, so the protocol's parser is exercised too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool

from searchain_graph.baselines import create_react_agent_graph
from searchain_graph.baselines.react import OBSERVATION_CHARS
from searchain_graph.baselines.react_agent import search_tool
from searchain_graph.evaluation.methods import METHOD_DESCRIPTIONS, METHODS
from searchain_graph.llms.tool_calls import chat_messages, parse_tool_calls, template_takes_tools
from tests.fakes import QUESTION, RuleChatModel, retriever

TOOLS = [convert_to_openai_tool(search_tool(retriever()))]


class ToolRuleModel(RuleChatModel):
    """A rule fake with ``bind_tools``: its replies' ``<tool_call>`` blocks become tool calls."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        result = super()._generate(messages, stop, run_manager)
        message = result.generations[0].message
        text, calls = parse_tool_calls(message.text, kw.get("tools") or [])
        result.generations[0].message = AIMessage(text, tool_calls=calls, usage_metadata=message.usage_metadata)  # type: ignore[attr-defined]
        return result


def call(query: str) -> str:
    return f'I need a fact.\n<tool_call>\n{{"name": "search", "arguments": {{"query": "{query}"}}}}\n</tool_call>'


def agent_model(searches: int) -> ToolRuleModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        if messages[-1].text.rstrip().endswith("Let's think step by step."):  # the CoT-SC backoff
            return "So the answer is: Toronto."
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if done >= searches:
            return "Kevin Drew was born in Toronto. So the answer is: Toronto."
        return call(["Spirit If performer", "Kevin Drew birthplace", "Toronto bus station"][done % 3])

    return ToolRuleModel(respond=respond)


def test_agent_searches_with_the_tool_and_answers() -> None:
    model = agent_model(searches=2)
    out = create_react_agent_graph(model, retriever()).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto" and out["rounds"] == 2 and out["warnings"] == []
    assert out["usage"]["llm_calls"] == 3 and out["usage"]["retrieval_calls"] == 2
    assert [p["metadata"]["id"] for p in out["passages"]] == ["p1", "p2"]
    assert "Action: search[Spirit If performer]" in out["final_content"]
    assert "Observation: Spirit If... Spirit If... is the debut solo album" in out["final_content"]  # title, text
    assert isinstance(model.calls[0][0], SystemMessage) and "search tool" in model.calls[0][0].text
    tool_results = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
    assert len(tool_results) == 2 and all(len(m.text) <= OBSERVATION_CHARS for m in tool_results)


async def test_agent_runs_async_the_same() -> None:
    out = await create_react_agent_graph(agent_model(searches=1), retriever()).ainvoke({"question": QUESTION})
    assert out["answer"] == "Toronto" and out["rounds"] == 1 and out["usage"]["llm_calls"] == 2


def test_agent_call_limit_backs_off_to_cot_sc() -> None:
    model = agent_model(searches=99)
    graph = create_react_agent_graph(model, retriever(), max_steps=3, backoff_samples=2)
    out = graph.invoke({"question": QUESTION})
    assert out["usage"]["llm_calls"] == 3 + 2 and out["usage"]["retrieval_calls"] == 3 and out["rounds"] == 3
    assert out["answer"] == "Toronto" and any("backed off to CoT-SC" in w for w in out["warnings"])
    assert "Model call limits exceeded" not in out["final_content"]
    bare = create_react_agent_graph(agent_model(99), retriever(), max_steps=2, backoff_samples=0)
    out = bare.invoke({"question": QUESTION})
    assert out["answer"] == "" and out["usage"]["llm_calls"] == 2


@pytest.mark.parametrize("reply", ["", "<tool_call>{not json", '<tool_call>{"name": "rm", "arguments": {}}', "\x00"])
def test_agent_survives_a_model_that_ignores_the_protocol(reply: str) -> None:
    model = ToolRuleModel(respond=lambda m: reply)
    out = METHODS["react_agent"](model, retriever(), None, "multihop").invoke({"question": QUESTION})  # type: ignore[arg-type]
    assert out["usage"]["retrieval_calls"] == 0 and isinstance(out["answer"], str)
    assert out["usage"]["llm_calls"] <= 1 + 5 and "react_agent" in METHOD_DESCRIPTIONS


def test_agent_needs_bind_tools() -> None:
    with pytest.raises(TypeError, match="no bind_tools"):
        create_react_agent_graph(RuleChatModel(respond=lambda m: "x"), retriever())


def test_parse_tool_calls_layouts() -> None:
    text, calls = parse_tool_calls("Let me look.\n" + call("Kevin Drew")[15:], TOOLS)
    assert text == "Let me look." and [(c["name"], c["args"]) for c in calls] == [("search", {"query": "Kevin Drew"})]
    two = '[{"name": "search", "arguments": {"query": "a"}}, {"name": "search", "arguments": "{\\"query\\": \\"b\\"}"}]'
    _, calls = parse_tool_calls(f"<tool_call>{two}</tool_call>", TOOLS)
    assert [c["args"]["query"] for c in calls] == ["a", "b"] and calls[0]["id"] != calls[1]["id"]
    _, calls = parse_tool_calls('{"name": "search", "parameters": {"query": "c"}}', TOOLS)  # Llama 3.1's layout
    assert calls[0]["args"] == {"query": "c"}
    _, calls = parse_tool_calls('<tool_call>\n{"name": "search", "arguments": {"query": "d"}}', TOOLS)  # unclosed
    assert calls[0]["args"] == {"query": "d"}
    for bad in ['<tool_call>{"name": "delete", "arguments": {}}</tool_call>', "<tool_call>{oops</tool_call>", "hi"]:
        assert parse_tool_calls(bad, TOOLS) == (bad, [])


def test_chat_messages_render_tools_calls_and_results() -> None:
    calls = [{"name": "search", "args": {"query": "Kevin Drew"}, "id": "c1"}]
    messages = [
        SystemMessage("Be brief."),
        HumanMessage("Q?"),
        AIMessage("", tool_calls=calls),
        ToolMessage("Kevin Drew was born in Toronto.", tool_call_id="c1"),
    ]
    chat = chat_messages(messages, TOOLS)
    assert chat[0]["role"] == "system" and chat[0]["content"].endswith("Be brief.")
    assert json.dumps(TOOLS[0]["function"]) in chat[0]["content"]
    assert json.loads(chat[2]["content"].split("\n")[1]) == {"name": "search", "arguments": {"query": "Kevin Drew"}}
    assert chat[3] == {"role": "user", "content": "<tool_response>\nKevin Drew was born in Toronto.\n</tool_response>"}
    assert chat_messages(messages[1:2]) == [{"role": "user", "content": "Q?"}]
    native = chat_messages(messages, TOOLS, native=True)
    assert native[2]["tool_calls"][0]["function"] == {"name": "search", "arguments": {"query": "Kevin Drew"}}
    assert native[3] == {"role": "tool", "content": "Kevin Drew was born in Toronto.", "tool_call_id": "c1"}


def test_transformers_model_binds_tools_in_its_template(tiny_llm_dir: Path) -> None:
    from searchain_graph.llms.chat_model import TransformersChatModel

    llm = TransformersChatModel(model_path=str(tiny_llm_dir), max_new_tokens=4, stop_repeats=0)
    reply = llm.bind_tools([search_tool(retriever())]).invoke("Where was Kevin Drew born?")
    assert isinstance(reply, AIMessage) and isinstance(reply.tool_calls, list)
    tok = llm._tokenizer
    assert not template_takes_tools(tok)
    prompt = tok.decode(llm._encode(chat_messages([HumanMessage("Q?")], TOOLS)))
    assert "<tool_call>" in prompt and '"name": "search"' in prompt
    tok.chat_template = (
        "{% if tools %}TOOLS:{% for t in tools %}{{ t['function']['name'] }};{% endfor %}{% endif %}"
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    )
    assert template_takes_tools(tok)
    assert tok.decode(llm._encode(chat_messages([HumanMessage("Q?")], TOOLS, native=True), TOOLS)).startswith(
        "TOOLS:search;"
    )
    assert llm.bind_tools([search_tool(retriever())]).invoke("Q?").tool_calls == []
