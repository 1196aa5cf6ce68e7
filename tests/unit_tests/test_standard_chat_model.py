"""LangChain's standard unit tests (``langchain-tests``) for :class:`TransformersChatModel`.

The unit suite builds the model from its parameters without running it (loading is lazy), and
checks what every LangChain chat model must do: construction, standard params, ``bind_tools``
with each kind of tool. Skipped, and why: ``init_from_env`` (a local model reads no API key from
the environment) and serialisation (``is_lc_serializable`` is False: a model is its weights on
disk, not a config to rebuild elsewhere).
The integration suite runs the real SmolLM2 (``tests/integration_tests/test_standard_chat_model_smollm2.py``).
"""

from __future__ import annotations

from typing import Any

from langchain_tests.unit_tests import ChatModelUnitTests

from searchain_graph.llms.chat_model import TransformersChatModel


class TestTransformersChatModelUnit(ChatModelUnitTests):
    @property
    def chat_model_class(self) -> type[TransformersChatModel]:
        return TransformersChatModel

    @property
    def chat_model_params(self) -> dict[str, Any]:
        # A path is all the constructor needs: nothing is loaded until the first call.
        return {"model_path": "HuggingFaceTB/SmolLM2-135M-Instruct", "max_new_tokens": 16}

    @property
    def has_tool_calling(self) -> bool:
        return True  # bind_tools: a text protocol of <tool_call> JSON blocks (llms.tool_calls)

    @property
    def has_structured_output(self) -> bool:
        return False
