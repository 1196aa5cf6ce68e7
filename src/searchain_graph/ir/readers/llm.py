"""LLMReader: the chat model reads the passage, and its token probabilities give *f*.

A reader is any object with ``read(query, passage) -> ReaderOutput`` (the passage a
:class:`~searchain_graph.ir.readers.base.Passage`, text and title apart, see
:mod:`~searchain_graph.ir.readers.base`). When it also has ``read_batch(pairs)`` (and, for
async graphs, ``aread_batch``), SearChain reads all nodes of one round in a single call.

:class:`LLMReader` is the embedded default: it asks the chat model to copy the
answer span out of the passage, and derives *f* from the model's own token
probabilities. Its confidence is on a log-odds scale chosen so that the paper's
θ = 1.5 keeps its meaning of "confident enough to overrule the LLM":

* ``p`` = the geometric mean of the probabilities of the answer's tokens
  (``exp`` of their mean log-probability), i.e. how sure the model was, token by
  token, of the span it wrote;
* ``f = log(p / (1 - p))``, clipped to ``[-10, 10]``. θ = 1.5 therefore means
  ``p > 0.82``;
* an answer that does not occur in the passage (after SQuAD normalisation) is not
  extractive evidence, and gets ``f = -10``; so does "unanswerable".

Models that return no log-probabilities (``transformers serve``, for one, ignores the
request's ``logprobs``) get ``f = fallback_confidence`` (0.0 by default, below θ), with one
warning naming the model and its server: verification then never fires, and completion,
which ignores *f*, still works. The documented fallback for verification is a reader with a
confidence of its own (``--reader bundled``, the default; ``extractive``; ``dpr``). The
paper's DPR reader, whose *f* is a relevance logit, is a different scale; see ``docs/method.md``.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable, RunnableConfig

from searchain_graph.ir.readers.base import (
    MIN_CONFIDENCE,
    PassageLike,
    ReaderOutput,
    as_passage,
    logprob_confidence,
)
from searchain_graph.ir.readers.calibration import chat_model_name
from searchain_graph.llms.servers import server_of

logger = logging.getLogger(__name__)

READER_PROMPT = """Passage: {passage}

Question: {query}

Copy the shortest phrase from the passage that answers the question. \
If the passage does not answer it, reply: unanswerable"""
"""Prompt of :class:`LLMReader`. Zero-shot: small models copy few-shot demonstrations verbatim."""

_WORD = re.compile(r"\w+")
_STOPWORDS = frozenset(
    "a an the of in on at to for from by with and or is was were are be been it its this that as "
    "who what when where which why how did do does".split()
)


def project_answer(reply: str, query: str, passage: str) -> tuple[int, int] | None:
    """The character span of ``reply`` that is the reader's extractive answer *g*, or ``None``.

    Small models answer in sentences ("Kevin Drew was born in Toronto, Ontario, Canada.").
    The projection drops the words the question already contains, splits the reply into
    runs of the remaining words, and returns the longest stretch of the first run that
    occurs word for word in the passage, without stopwords at its edges ("Toronto,
    Ontario"). A reply with nothing grounded in the passage has no answer.
    """
    asked = {w.lower() for w in _WORD.findall(query)}
    text = " " + " ".join(w.lower() for w in _WORD.findall(passage)) + " "
    runs: list[list[tuple[str, int, int]]] = [[]]
    for match in _WORD.finditer(reply):
        word = match.group(0).lower()
        if word in asked:
            runs.append([])
        else:
            runs[-1].append((word, match.start(), match.end()))
    for run in runs:
        best: tuple[int, int] | None = None
        for i in range(len(run)):
            if run[i][0] in _STOPWORDS:
                continue
            for j in range(len(run), i, -1):
                if best is not None and j - i <= best[1] - best[0]:
                    break
                if run[j - 1][0] in _STOPWORDS:
                    continue
                if f" {' '.join(w for w, _, _ in run[i:j])} " in text:
                    best = (i, j)
                    break
        if best is not None:
            return run[best[0]][1], run[best[1] - 1][2]
    return None


def _token_logprobs(message: BaseMessage) -> list[tuple[str, float]] | None:
    """``(token, logprob)`` pairs from OpenAI-style ``response_metadata["logprobs"]``."""
    meta = getattr(message, "response_metadata", None) or {}
    logprobs = meta.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not content:
        return None
    return [(str(tok.get("token", "")), float(tok["logprob"])) for tok in content if "logprob" in tok]


def _span_logprobs(tokens: Sequence[tuple[str, float]], start: int, end: int) -> list[float]:
    """Log-probabilities of the tokens that overlap characters ``[start, end)`` of the reply."""
    picked, pos = [], 0
    for token, logprob in tokens:
        nxt = pos + len(token)
        if nxt > start and pos < end:
            picked.append(logprob)
        pos = nxt
    return picked or [logprob for _, logprob in tokens]


class LLMReader:
    """An extractive reader built on any LangChain chat model.

    *g* is the part of the model's reply that occurs word for word in the passage
    (:func:`project_answer`); *f* is :func:`logprob_confidence` of the tokens that wrote it.
    The model sees the passage as its title followed by its text (the text alone when it has
    no title), whitespace collapsed. A plain ``str`` passage is taken as
    :func:`~searchain_graph.ir.readers.base.as_passage` says.

    Args:
        llm: The chat model. Models with a ``logprobs`` field (``ChatOpenAI``,
            :class:`~searchain_graph.llms.chat_model.TransformersChatModel`) are asked for token
            log-probabilities; others get ``fallback_confidence``.
        max_passage_chars: Passages are cut to this many characters before reading.
        fallback_confidence: *f* for models that return no log-probabilities.
        max_concurrency: Parallel calls in :meth:`read_batch` (remote models).

    Example:
        >>> reader = LLMReader(llm)  # doctest: +SKIP
        >>> passage = Passage("Kevin Drew ... born in Toronto", title="Kevin Drew")
        >>> reader.read("Where was Kevin Drew born?", passage)  # doctest: +SKIP
        ReaderOutput(answer='Toronto', confidence=3.2)
    """

    default_threshold: float = 1.5
    """θ for this reader's scale: f > 1.5 means a mean token probability above 0.82."""

    reads_passages: ClassVar[bool] = True
    """Takes :class:`~searchain_graph.ir.readers.base.Passage` (text and title apart)."""

    answers_yes_no: ClassVar[bool] = False
    """*g* is words of the passage, never a yes or no: yes/no answers are not verified."""

    @property
    def calibration_key(self) -> str:
        """Names this reader and its chat model for a saved θ: ``"llm:<model name>"``."""
        return "llm:" + chat_model_name(self.llm)

    def __init__(
        self,
        llm: BaseChatModel,
        *,
        max_passage_chars: int = 1500,
        fallback_confidence: float = 0.0,
        max_concurrency: int = 8,
    ) -> None:
        self.llm = llm
        self.max_passage_chars = max_passage_chars
        self.fallback_confidence = fallback_confidence
        self.max_concurrency = max_concurrency
        bind: dict[str, Any] = {"stop": ["\n"]}
        if "logprobs" in getattr(type(llm), "model_fields", {}):
            bind["logprobs"] = True
        self._runnable: Runnable[Any, BaseMessage] = llm.bind(**bind).with_config(
            run_name="llm_reader", tags=["searchain:reader"]
        )
        self._warned = False

    def _describe_model(self) -> str:
        """``ChatOpenAI 'name' at http://...`` for a server's model; the class name for others."""
        name = type(self.llm).__name__
        if "openai_api_base" in getattr(type(self.llm), "model_fields", {}):
            return f"{name} {chat_model_name(self.llm)!r} at {server_of(self.llm)}"
        return name

    def _prompt(self, query: str, passage: str) -> list[BaseMessage]:
        passage = " ".join(passage.split())[: self.max_passage_chars]
        return [HumanMessage(READER_PROMPT.format(passage=passage, query=" ".join(query.split())))]

    def _score(self, query: str, passage: str, message: BaseMessage) -> ReaderOutput:
        text = message.content if isinstance(message.content, str) else str(message.content)
        reply = text.strip().splitlines()[0] if text.strip() else ""
        if not reply or "unanswerable" in reply.lower():
            return ReaderOutput("", MIN_CONFIDENCE)
        span = project_answer(reply, query, passage[: self.max_passage_chars])
        if span is None:
            return ReaderOutput("", MIN_CONFIDENCE)
        answer = reply[span[0] : span[1]]
        logprobs = _token_logprobs(message) if isinstance(message, AIMessage) else None
        if logprobs is None:
            if not self._warned:
                logger.warning(
                    "%s returned no token log-probabilities: LLMReader reports f=%.1f for every answer, so "
                    "verification cannot overrule the LLM (completion still works). For verification, use a "
                    "reader of its own (--reader bundled, the default) or a server that returns them (OpenAI, "
                    "vLLM, llama.cpp's server)",
                    self._describe_model(),
                    self.fallback_confidence,
                )
                self._warned = True
            return ReaderOutput(answer, self.fallback_confidence)
        offset = text.find(reply)
        return ReaderOutput(answer, logprob_confidence(_span_logprobs(logprobs, offset + span[0], offset + span[1])))

    def read(self, query: str, passage: PassageLike) -> ReaderOutput:
        """Extract the answer to ``query`` from ``passage`` (for a ``str``, see :func:`.base.as_passage`)."""
        text = as_passage(passage).joined()
        return self._score(query, text, self._runnable.invoke(self._prompt(query, text)))

    def read_batch(self, pairs: Sequence[tuple[str, PassageLike]]) -> list[ReaderOutput]:
        """Read many ``(query, Passage)`` pairs with one ``batch`` call to the model."""
        config: RunnableConfig = {"max_concurrency": self.max_concurrency}
        texts = [(q, as_passage(p).joined()) for q, p in pairs]
        messages = self._runnable.batch([self._prompt(q, p) for q, p in texts], config=config)
        return [self._score(q, p, m) for (q, p), m in zip(texts, messages, strict=True)]

    async def aread_batch(self, pairs: Sequence[tuple[str, PassageLike]]) -> list[ReaderOutput]:
        """Async :meth:`read_batch`."""
        config: RunnableConfig = {"max_concurrency": self.max_concurrency}
        texts = [(q, as_passage(p).joined()) for q, p in pairs]
        messages = await self._runnable.abatch([self._prompt(q, p) for q, p in texts], config=config)
        return [self._score(q, p, m) for (q, p), m in zip(texts, messages, strict=True)]
