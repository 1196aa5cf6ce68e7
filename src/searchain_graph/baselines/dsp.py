"""DSP (Khattab et al., 2022) through the ``dspy`` package: its multi-hop retrieve-then-read program.

The program is DSPy's own multi-hop example (the "simplified Baleen" of the DSPy paper and
tutorials), written with DSPy's modules: for each of ``max_hops`` hops a ``dspy.ChainOfThought``
writes a search query from the question and the context so far, the query retrieves
``passages_per_hop`` passages, and the context grows (deduplicated); a last
``dspy.ChainOfThought`` answers from the context. DSPy formats every prompt and parses every reply
itself (its ``ChatAdapter``, which falls back to its ``JSONAdapter``); the program is not
compiled (no optimiser, no demonstrations), as in a zero-shot DSPy run.

The adapter to this project's components:

* :class:`LangChainEngine` is a DSPy engine (``dspy.LM(engine=...)``, DSPy 3.4's contract for
  custom models) over any LangChain chat model: DSPy's canonical request becomes LangChain
  messages, the reply a DSPy response. Its calls run inside the graph's node, so they nest under
  it in LangSmith traces; the node returns their cost as its ``usage``, counted like every other
  method's calls.
* Retrieval is the harness's LangChain retriever, called directly (DSPy 3 programs call any
  Python search function).

DSPy's response cache is off (each call is made and counted), and DSPy's settings are set per
run with ``dspy.context``, so concurrent runs do not share them.
"""

from __future__ import annotations

import contextvars
import functools
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.retrievers import BaseRetriever
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START
from langgraph.types import RetryPolicy

from searchain_graph.baselines.common import MethodState, final_answer, merge_passages
from searchain_graph.baselines.driver import (
    BaselineGraph,
    BaselineSettings,
    baseline_driver,
    blocking_node,
    compile_graph,
    graph_builder,
)
from searchain_graph.method.calls import call_usage, doc_dict, message_text, trace_config
from searchain_graph.method.state import DocumentDict, Usage, add_usage, empty_usage

__all__ = ["LangChainEngine", "create_dsp_graph"]

PASSAGE_CHARS = 600
"""Most characters of one passage in DSPy's context (what goes to the LLM stays bounded)."""

_calls: contextvars.ContextVar[list[tuple[list[BaseMessage], BaseMessage]] | None] = contextvars.ContextVar(
    "searchain_dsp_calls", default=None
)


def _messages(request: Any) -> list[BaseMessage]:
    out: list[BaseMessage] = []
    if request.system is not None:
        system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system)
        out.append(SystemMessage(system))
    for m in request.messages:
        text = m.text or ""
        out.append(AIMessage(text) if m.role == "assistant" else HumanMessage(text))
    return out


def _options(request: Any) -> dict[str, Any]:
    config, options = request.config, {}
    if config.stop:
        options["stop"] = list(config.stop)
    if config.temperature is not None and config.temperature > 0:
        options["temperature"] = config.temperature
    return options


def _response(model: str, reply: BaseMessage) -> Any:
    from dspy.lm15 import Message, Response, TextPart, Usage

    meta = getattr(reply, "usage_metadata", None) or {}
    tokens_in, tokens_out = int(meta.get("input_tokens", 0) or 0), int(meta.get("output_tokens", 0) or 0)
    return Response(
        id=None,
        model=model,
        message=Message.assistant([TextPart(message_text(reply))]),
        finish_reason="stop",
        usage=Usage(input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out),
    )


def _record(sent: list[BaseMessage], reply: BaseMessage) -> None:
    calls = _calls.get()
    if calls is not None:
        calls.append((sent, reply))


class LangChainEngine:
    """A DSPy engine (``complete(Request) -> Response``) over a LangChain chat model.

    Use it as ``dspy.LM("langchain/<name>", engine=LangChainEngine(llm), cache=False)``. The
    request's system text and messages become LangChain messages; its stop sequences and a
    positive temperature are passed as call options.
    """

    def __init__(self, llm: BaseChatModel, model: str = "langchain") -> None:
        self.llm = llm
        self.model = model

    def complete(self, request: Any) -> Any:
        """Ask the chat model; DSPy's response."""
        sent = _messages(request)
        reply = self.llm.invoke(sent, **_options(request))
        _record(sent, reply)
        return _response(self.model, reply)

    def stream(self, request: Any) -> Any:
        """The completed response as DSPy stream events (no token streaming)."""
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        """Nothing to release: the chat model belongs to the caller."""


@functools.cache
def _signatures() -> tuple[Any, Any]:
    """DSPy's two signatures of the multi-hop program (defined once, on first use)."""
    import dspy

    class GenerateSearchQuery(dspy.Signature):  # type: ignore[misc]
        """Write a simple search query that will help answer a complex question."""

        context: list[str] = dspy.InputField(desc="may contain relevant facts")
        question: str = dspy.InputField()
        query: str = dspy.OutputField()

    class GenerateAnswer(dspy.Signature):  # type: ignore[misc]
        """Answer questions with short factoid answers."""

        context: list[str] = dspy.InputField(desc="may contain relevant facts")
        question: str = dspy.InputField()
        answer: str = dspy.OutputField(desc="often between 1 and 5 words")

    return GenerateSearchQuery, GenerateAnswer


def _program(max_hops: int, passages_per_hop: int, search: Any) -> Any:
    """DSPy's multi-hop program ("simplified Baleen"), with ``search(query, k)`` as its retriever."""
    import dspy

    GenerateSearchQuery, GenerateAnswer = _signatures()

    class MultiHop(dspy.Module):  # type: ignore[misc]
        def __init__(self) -> None:
            super().__init__()
            self.generate_query = [dspy.ChainOfThought(GenerateSearchQuery) for _ in range(max_hops)]
            self.generate_answer = dspy.ChainOfThought(GenerateAnswer)

        def forward(self, question: str) -> Any:
            context: list[str] = []
            for hop in range(max_hops):
                query = self.generate_query[hop](context=context, question=question).query
                context = list(dict.fromkeys(context + search(query, passages_per_hop)))
            prediction = self.generate_answer(context=context, question=question)
            return dspy.Prediction(context=context, reasoning=prediction.reasoning, answer=prediction.answer)

    return MultiHop()


def create_dsp_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    *,
    max_hops: int = 2,
    passages_per_hop: int = 3,
    task: str = "multihop",
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "dsp",
) -> BaselineGraph:
    """DSP's multi-hop retrieve-then-read program, run by the ``dspy`` package on this LLM and retriever.

    One node, ``dsp_multihop``, runs the program: ``max_hops`` query-writing calls, each followed
    by a retrieval of ``passages_per_hop`` passages (each at most :data:`PASSAGE_CHARS`
    characters), then the answering call (DSPy's defaults: 2 hops, 3 passages); it returns their
    cost as its ``usage`` (under ``ainvoke`` the program runs in a worker thread). A reply DSPy
    cannot parse ends the run with an empty answer and a warning naming DSPy's error.

    Args:
        llm: Any LangChain chat model (through :class:`LangChainEngine`).
        retriever: Any LangChain retriever; its first ``passages_per_hop`` documents are a hop's.
        max_hops: Query-and-retrieve hops.
        passages_per_hop: Passages retrieved per hop.
        task: The task family (see :func:`create_cot_graph`); the question is phrased for it.
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the node.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        A compiled graph: input ``{"question": str}``, output :class:`MethodOutput` with
        ``rounds`` = the hops run and ``final_content`` DSPy's reasoning and answer.

    Raises:
        ImportError: ``dspy`` is not installed (``pip install 'searchain-graph[eval]'``).
    """
    import dspy
    from dspy.utils.exceptions import AdapterParseError

    if not isinstance(max_hops, int) or max_hops < 1:
        raise ValueError(f"max_hops must be >= 1, got {max_hops!r}")
    if not isinstance(passages_per_hop, int) or passages_per_hop < 1:
        raise ValueError(f"passages_per_hop must be >= 1, got {passages_per_hop!r}")
    settings = BaselineSettings(task, max_question_chars)
    driver = baseline_driver(name, llm, settings, retriever=retriever)
    lm = dspy.LM(
        f"langchain/{getattr(llm, 'model_name', None) or type(llm).__name__}",
        engine=LangChainEngine(llm),
        cache=False,
    )

    def run_program(question: str, found: list[list[DocumentDict]]) -> Any:
        config = trace_config("retrieve", 1, named=False, searchain_method=name)

        def search(query: str, k: int) -> list[str]:
            docs = [doc_dict(d) for d in list(retriever.invoke(query, config=config))[:k]]
            found.append(docs)
            return [" ".join(d["page_content"].split())[:PASSAGE_CHARS] for d in docs]

        program = _program(max_hops, passages_per_hop, search)
        with dspy.context(lm=lm):
            try:
                return program(question=question)
            except AdapterParseError as exc:  # the LLM ignored DSPy's format: the run ends, the graph does not
                return exc

    def run(state: MethodState, settings: BaselineSettings) -> dict[str, Any]:
        # DSPy calls the model and the retriever itself: their calls are this step's usage.
        calls: list[tuple[list[BaseMessage], BaseMessage]] = []
        found: list[list[DocumentDict]] = []
        token = _calls.set(calls)
        try:
            outcome = run_program(settings.question(state["question"]), found)
        finally:
            _calls.reset(token)
        usage: Usage = empty_usage()
        for sent, reply in calls:
            usage = add_usage(usage, call_usage(sent, reply))
        out: dict[str, Any] = {
            "usage": add_usage(usage, {"retrieval_calls": len(found)}),
            "passages": merge_passages([], [d for docs in found for d in docs]),
            "rounds": len(found),
        }
        if isinstance(outcome, Exception):
            warning = f"DSPy could not parse the LLM's reply: {' '.join(str(outcome).split())[:300]}"
            return {**out, "warnings": [*state["warnings"], warning]}
        reasoning = " ".join(str(getattr(outcome, "reasoning", "") or "").split())
        answer = " ".join(str(outcome.answer or "").split())
        content = f"{reasoning} So the answer is: {answer}".strip()
        return {**out, "final_content": content, "answer": final_answer(f"So the answer is: {answer}", settings.task)}

    builder = graph_builder()
    builder.add_node(
        "dsp_multihop", blocking_node(driver, "dsp_multihop", run, starts_run=True), retry_policy=retry_policy
    )
    builder.add_edge(START, "dsp_multihop")
    builder.add_edge("dsp_multihop", END)
    return compile_graph(builder, checkpointer, name)
