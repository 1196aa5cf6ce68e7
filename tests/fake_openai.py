"""An OpenAI-compatible chat-completions server around a rule-based LLM, with faults on demand.

Unit tests run it with uvicorn on 127.0.0.1 (``tests.helpers.served``) and talk to it through
the real ``ChatOpenAI`` client, so that timeouts, retries and error messages are the SDK's own.
The real server (``transformers serve`` with SmolLM2) runs in
``tests/integration_tests/test_openai_server.py``.
"""

from __future__ import annotations

import asyncio
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import convert_to_messages
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.fakes import RuleChatModel

_TOKEN = re.compile(r"\s*\S+")


@dataclass
class FakeOpenAIServer:
    """What the fake server does, and what it was asked.

    Attributes:
        llm: Answers each request's messages.
        failures: The next this-many requests get ``fail_status`` instead of an answer.
        fail_status: The HTTP status of those failures.
        delay: Seconds each request waits before answering.
        token_logprob: When set, replies carry OpenAI-style ``logprobs`` (this value per token)
            if the request asked for them; ``None``: the field is ignored, as ``transformers serve`` does.
        served_model: When set, other model names get a 400, as a pinned server answers.
        requests: The JSON body of every request received.
    """

    llm: RuleChatModel
    failures: int = 0
    fail_status: int = 503
    delay: float = 0.0
    token_logprob: float | None = None
    served_model: str | None = None
    requests: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def app(self) -> Starlette:
        """The ASGI app: ``POST /v1/chat/completions``."""
        return Starlette(routes=[Route("/v1/chat/completions", self._complete, methods=["POST"])])

    async def _complete(self, request: Request) -> JSONResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(body)
            failing = self.failures > 0
            self.failures -= failing
        if self.delay:
            await asyncio.sleep(self.delay)
        if failing:
            return JSONResponse({"error": {"message": "overloaded", "type": "server_error"}}, self.fail_status)
        if self.served_model is not None and body.get("model") != self.served_model:
            message = f"Server is pinned to {self.served_model!r}; requested {body.get('model')!r}."
            return JSONResponse({"detail": message}, 400)
        text = self.llm.invoke(convert_to_messages(body["messages"])).text
        for stop in body.get("stop") or []:
            text = text.split(stop, 1)[0]
        choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}}
        choice["finish_reason"] = "stop"
        if body.get("logprobs") and self.token_logprob is not None:
            tokens = _TOKEN.findall(text)
            choice["logprobs"] = {
                "content": [
                    {"token": t, "logprob": self.token_logprob, "bytes": None, "top_logprobs": []} for t in tokens
                ]
            }
        words_in = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        usage = {"prompt_tokens": words_in, "completion_tokens": len(text.split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        reply = {"id": "fake", "object": "chat.completion", "created": 0, "model": body.get("model")}
        return JSONResponse({**reply, "choices": [choice], "usage": usage})
