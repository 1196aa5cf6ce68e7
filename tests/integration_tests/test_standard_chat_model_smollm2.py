"""LangChain's standard integration tests (``langchain-tests``) for :class:`TransformersChatModel`, on
SmolLM2-135M-Instruct from PyPI.

The suite invokes, streams and batches the real model, sync and async, and checks the messages,
chunks (one ``AIMessageChunk``, the last, per reply), usage metadata and stop sequences it
returns: 17 tests pass. It skips 33, and each would need:

* tool calling (15) and tool choice (1): ``bind_tools`` exists (a ``<tool_call>`` text protocol,
  used by ``test_react_agent.py``), but SmolLM2-135M does not follow it, so the
  suite runs with ``has_tool_calling`` False here;
* structured output (8) and JSON mode (1): no constrained decoding;
* PDF, audio and image inputs, and image or PDF tool messages (5): a text-only model;
* Anthropic-format inputs (1): the suite's own opt-in for that provider's message blocks;
* ``model_override_value`` (4): per-call ``model=`` overrides, which a model loaded from one
  weights file cannot honour;
* VCR (1): the suite's recorded-HTTP benchmark, for models behind an API.

Replies are capped at 16 tokens: the suite checks their shape, not their content.
"""

from __future__ import annotations

from typing import Any

import pytest
from langchain_tests.integration_tests import ChatModelIntegrationTests

from searchain_graph.llms.chat_model import TransformersChatModel

pytestmark = pytest.mark.integration


def _smollm2() -> dict[str, Any]:
    try:
        model = TransformersChatModel.from_smollm2(max_new_tokens=16)
    except FileNotFoundError as exc:  # pragma: no cover - CI installs it
        pytest.skip(str(exc))
    return {
        "model_path": model.model_path,
        "gguf_file": model.gguf_file,
        "backend": model.backend,
        "max_new_tokens": 16,
    }


class TestTransformersChatModelOnSmolLM2(ChatModelIntegrationTests):
    @property
    def chat_model_class(self) -> type[TransformersChatModel]:
        return TransformersChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return _smollm2()

    @property
    def has_tool_calling(self) -> bool:
        return False

    @property
    def has_structured_output(self) -> bool:
        return False
