from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import pytest
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from searchain_graph.ir.readers.base import Passage, ReaderOutput, aread_pairs, logprob_confidence, read_pairs
from searchain_graph.ir.readers.llm import LLMReader, project_answer

PASSAGE = Passage(
    "Kevin Drew is a Canadian musician, born on 9 September 1976 in Toronto, Ontario.", title="Kevin Drew"
)


class LogprobChatModel(BaseChatModel):
    """Replies with fixed text and a fixed log-probability per token (one token per character)."""

    reply: str
    logprob: float
    logprobs: bool = False
    seen_kwargs: list[dict[str, Any]] = []

    @property
    def _llm_type(self) -> str:
        return "logprob-fake"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.seen_kwargs.append({"stop": stop, **kwargs})
        meta: dict[str, Any] = {}
        if kwargs.get("logprobs"):
            meta["logprobs"] = {"content": [{"token": ch, "logprob": self.logprob} for ch in self.reply]}
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply, response_metadata=meta))])


def test_confidence_is_log_odds_of_the_geometric_mean_probability() -> None:
    assert logprob_confidence([math.log(0.5)]) == pytest.approx(0.0)
    p = 0.9
    assert logprob_confidence([math.log(p)] * 3) == pytest.approx(math.log(p / (1 - p)))
    assert logprob_confidence([0.0]) == 10.0
    assert logprob_confidence([-1e9]) == -10.0
    assert logprob_confidence([]) == -10.0
    # θ = 1.5 means a geometric-mean token probability above 0.8176.
    assert logprob_confidence([math.log(0.82)]) > 1.5 > logprob_confidence([math.log(0.81)])


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("Kevin Drew was born in Toronto, Ontario, Canada.", "Toronto, Ontario"),
        ("Toronto", "Toronto"),
        ("The answer is 9 September 1976.", "9 September 1976"),
        ("He was born in Montreal.", None),
        ("Kevin Drew was born.", None),  # only the question's own words
    ],
)
def test_projection_keeps_the_grounded_span(reply: str, expected: str | None) -> None:
    span = project_answer(reply, "Where was Kevin Drew born?", PASSAGE.joined())
    assert (reply[span[0] : span[1]] if span else None) == expected


def test_llm_reader_with_logprobs() -> None:
    llm = LogprobChatModel(reply="Kevin Drew was born in Toronto, Ontario.", logprob=math.log(0.95))
    out = LLMReader(llm).read("Where was Kevin Drew born?", PASSAGE)
    assert out == ReaderOutput("Toronto, Ontario", pytest.approx(math.log(0.95 / 0.05)))
    assert llm.seen_kwargs[-1]["logprobs"] is True
    assert llm.seen_kwargs[-1]["stop"] == ["\n"]


def test_llm_reader_ungrounded_and_unanswerable() -> None:
    confident = math.log(0.99)
    reader = LLMReader(LogprobChatModel(reply="Montreal", logprob=confident))
    assert reader.read("Where was Kevin Drew born?", PASSAGE) == ReaderOutput("", -10.0)
    reader = LLMReader(LogprobChatModel(reply="The answer is: unanswerable", logprob=confident))
    assert reader.read("Where was Kevin Drew born?", PASSAGE) == ReaderOutput("", -10.0)


def test_llm_reader_without_logprobs_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    llm = GenericFakeChatModel(messages=iter([AIMessage("Toronto"), AIMessage("Toronto")]))
    reader = LLMReader(llm, fallback_confidence=0.25)
    assert reader.read("Where was Kevin Drew born?", PASSAGE) == ReaderOutput("Toronto", 0.25)
    assert "no token log-probabilities" in caplog.text
    assert reader.read_batch([("Where was Kevin Drew born?", PASSAGE)]) == [ReaderOutput("Toronto", 0.25)]


async def test_llm_reader_async_batch() -> None:
    llm = LogprobChatModel(reply="Toronto", logprob=math.log(0.9))
    outs = await LLMReader(llm).aread_batch([("Where was Kevin Drew born?", PASSAGE)] * 3)
    assert [o.answer for o in outs] == ["Toronto"] * 3


class OnlyRead:
    reads_passages: ClassVar[bool] = True

    def __init__(self) -> None:
        self.n = 0

    def read(self, query: str, passage: Passage) -> tuple[str, float]:
        assert isinstance(passage, Passage)
        self.n += 1
        return (query.upper(), 2)


class BadBatch:
    reads_passages: ClassVar[bool] = True

    def read(self, query: str, passage: Passage) -> ReaderOutput:
        return ReaderOutput("x", 0.0)

    def read_batch(self, pairs: Sequence[tuple[str, Passage]]) -> list[ReaderOutput]:
        return []


def test_read_pairs_uses_read_without_read_batch_and_coerces() -> None:
    reader = OnlyRead()
    pairs = [("a", Passage("p")), ("b", Passage("p", "t"))]
    assert read_pairs(reader, pairs) == [ReaderOutput("A", 2.0), ReaderOutput("B", 2.0)]
    assert reader.n == 2
    assert read_pairs(reader, []) == []


async def test_aread_pairs_runs_a_sync_reader_in_a_thread() -> None:
    assert await aread_pairs(OnlyRead(), [("a", Passage("p"))]) == [ReaderOutput("A", 2.0)]


def test_read_batch_with_wrong_length_is_an_error() -> None:
    with pytest.raises(ValueError, match="returned 0 results for 1 pairs"):
        read_pairs(BadBatch(), [("a", Passage("p"))])
