"""Tool calling for local chat models that have none: a text protocol in and out of the chat template.

:meth:`~searchain_graph.llms.chat_model.TransformersChatModel.bind_tools` binds OpenAI-style tool
schemas; :func:`chat_messages` then turns a conversation into the chat template's
``{"role", "content"}`` turns with a system turn that lists the tools and asks for calls as

.. code-block:: text

    <tool_call>
    {"name": "search", "arguments": {"query": "..."}}
    </tool_call>

(the layout of Hermes-style function-calling models and of Qwen's chat template), renders the
calls an ``AIMessage`` made the same way, and a ``ToolMessage`` as a user turn holding
``<tool_response>...</tool_response>``. :func:`parse_tool_calls` reads the calls back out of a
reply: every ``<tool_call>`` block (an unclosed last one too), or a reply that is nothing but such
a JSON object. A call that is not valid JSON, names no bound tool or has no ``arguments`` object is
left in the text, so a model that ignores the protocol gives a plain answer and never an error.

A model whose chat template renders tools itself (:func:`template_takes_tools`) gets them through
the template instead (``apply_chat_template(..., tools=...)``), in the turns it was trained on; its
calls are read back the same way (Hermes/Qwen ``<tool_call>`` blocks, or Llama 3.1's bare JSON with
``parameters``). SmolLM2-135M, the offline default, has no tool template and, measured here, does
not follow either layout: it answers without calling tools.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.messages.tool import ToolCall, tool_call

__all__ = ["TOOLS_SYSTEM_PROMPT", "chat_messages", "parse_tool_calls", "template_takes_tools"]

TOOLS_SYSTEM_PROMPT = """You can call these tools:
{tools}

To call a tool, reply with its name and arguments as JSON inside <tool_call></tool_call> tags:
<tool_call>
{{"name": "<tool name>", "arguments": {{"<argument>": "<value>"}}}}
</tool_call>
The tool's result comes back inside <tool_response></tool_response> tags. When no tool is needed, \
reply normally."""
"""The system turn that lists the bound tools (``tools``: one JSON schema per line)."""

_BLOCK = re.compile(r"<tool_call>\s*(?P<body>.*?)\s*(?:</tool_call>|$)", re.DOTALL)


def _role(message: BaseMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, HumanMessage | ToolMessage):
        return "user"
    return str(getattr(message, "role", "user"))


def _call_text(call: ToolCall) -> str:
    return "<tool_call>\n" + json.dumps({"name": call["name"], "arguments": call["args"]}) + "\n</tool_call>"


def _content(message: BaseMessage) -> str:
    text = message.text
    if isinstance(message, ToolMessage):
        return f"<tool_response>\n{text}\n</tool_response>"
    if isinstance(message, AIMessage) and message.tool_calls:
        return "\n".join([text.strip(), *(_call_text(c) for c in message.tool_calls)]).strip()
    return text


def _native(message: BaseMessage) -> dict[str, Any]:
    if isinstance(message, ToolMessage):
        return {"role": "tool", "content": message.text, "tool_call_id": message.tool_call_id}
    turn: dict[str, Any] = {"role": _role(message), "content": message.text}
    if isinstance(message, AIMessage) and message.tool_calls:
        turn["tool_calls"] = [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"]}}
            for c in message.tool_calls
        ]
    return turn


def template_takes_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template renders tools itself (Qwen, Llama 3.1, SmolLM3, ...)."""
    template = getattr(tokenizer, "chat_template", None)
    return isinstance(template, str) and "tools" in template


def chat_messages(
    messages: Sequence[BaseMessage], tools: Sequence[dict[str, Any]] | None = None, *, native: bool = False
) -> list[dict[str, Any]]:
    """The chat template's turns for ``messages``, with a tools system turn when ``tools`` are bound.

    With ``native`` (a template that renders tools, :func:`template_takes_tools`) the turns are in
    transformers' tool-use layout (``tool_calls`` on assistant turns, ``tool`` turns) and the
    template describes the tools. Otherwise the tools' description goes before the first system
    message's text (or in a system turn of its own), and tool calls and results are written in the
    text protocol.
    """
    if native:
        return [_native(m) for m in messages]
    chat = [{"role": _role(m), "content": _content(m)} for m in messages]
    if not tools:
        return chat
    described = TOOLS_SYSTEM_PROMPT.format(tools="\n".join(json.dumps(t.get("function", t)) for t in tools))
    if chat and chat[0]["role"] == "system":
        chat[0] = {"role": "system", "content": f"{described}\n\n{chat[0]['content']}".strip()}
        return chat
    return [{"role": "system", "content": described}, *chat]


def _names(tools: Sequence[dict[str, Any]]) -> set[str]:
    return {str(t.get("function", t).get("name")) for t in tools}


def _calls(body: str, names: set[str]) -> list[ToolCall]:
    """The calls of one block: a JSON object, or a list of them (SmolLM2-1.7B's layout)."""
    try:
        data = json.loads(body)
    except ValueError:
        return []
    items = data if isinstance(data, list) else [data]
    return [c for c in (_call(item, names) for item in items) if c is not None]


def _call(data: Any, names: set[str]) -> ToolCall | None:
    if not isinstance(data, dict) or data.get("name") not in names:
        return None
    args = data.get("arguments", data.get("parameters"))
    if isinstance(args, str):  # some models write the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return tool_call(name=str(data["name"]), args=args, id=f"call_{uuid.uuid4().hex[:16]}")


def parse_tool_calls(text: str, tools: Sequence[dict[str, Any]]) -> tuple[str, list[ToolCall]]:
    """The reply's text without its valid tool calls, and those calls (in order).

    Args:
        text: The model's reply.
        tools: The bound tools' OpenAI schemas; a call must name one of them.
    """
    names, calls, kept, last = _names(tools), [], [], 0
    for match in _BLOCK.finditer(text):
        found = _calls(match.group("body"), names)
        if found:
            calls.extend(found)
            kept.append(text[last : match.start()])
            last = match.end()
    kept.append(text[last:])
    if not calls and text.strip()[:1] in ("{", "["):  # bare JSON calls, without the tags
        found = _calls(text.strip(), names)
        if found:
            return "", found
    return "".join(kept).strip() if calls else text, calls
