r"""SearChain as a LangGraph state machine (Section 3 and Algorithm 1 of the paper).

The graph has four nodes, one per step of a round::

    START -> coq_generation -> ir_check -> feedback -> coq_generation -> ... -> tracing -> END
                                        \\-------------------------------------> tracing

* ``coq_generation`` (Section 3.2, ``ChainGenerate``): the LLM writes a whole
  Chain-of-Query; in later rounds it continues the conversation after IR's feedback,
  so the new chain is a new branch of the Tree-of-Reasoning rooted at the fed-back node.
* ``ir_check`` (Section 3.3, ``Traverse``/``IR``): the top-1 passage is retrieved for
  every unprocessed query (*M* skips the processed ones), the reader extracts *g* and
  *f* for all of them in one batch, and the nodes are judged in order: completion for an
  ``[Unsolved Query]``, verification (``f > θ`` and *g* not in the answer) for the others.
  The first node that needs feedback ends the round. Each node is recorded on the
  correct path *R* with its passage and its source.
* ``feedback``: the paper's correction or completion prompt is added to the conversation.
* ``tracing`` (Section 3.3, ``Tracing``): a final generation over *R* writes the answer
  with ``[n]`` citations of the supporting passages.

Every LLM, retriever, reader and per-node judgement runs under its own run name with
``searchain_round`` in its metadata, so a LangSmith trace shows each round.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import get_runtime
from langgraph.types import Command, RetryPolicy
from rouge_score import rouge_scorer

from searchain_graph.ir.corpus import passage_text
from searchain_graph.ir.readers.base import Reader, aread_pairs, read_pairs
from searchain_graph.method.context import SearChainContext
from searchain_graph.method.parsing import (
    answer_contains,
    citations,
    drop_invalid_citations,
    extract_final_answer,
    normalize_answer,
    parse_chain,
    word_count,
)
from searchain_graph.method.prompts import (
    COMPLETION_PROMPT,
    COQ_PROMPTS,
    CORRECTION_PROMPT,
    QUESTION_SUFFIXES,
    TRACING_PAIR,
    TRACING_PROMPT,
)
from searchain_graph.method.state import (
    Branch,
    ChainNode,
    DocumentDict,
    Feedback,
    InputState,
    OutputState,
    Reference,
    SearChainState,
    Usage,
)

QueryMatcher = Callable[[str, Sequence[str]], bool]
"""``is_duplicate(query, processed) -> bool``: the ``DuplicateQuery`` test of Algorithm 1."""

DEFAULT_THRESHOLD = 1.5
"""θ of the paper (Section 4.1): the DPR reader must be this confident to overrule the LLM."""

_ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)


class InvalidQuestionError(ValueError):
    """The question is empty, not text, or too long; the message says which."""


def validate_question(question: object, max_chars: int) -> str:
    """The question, whitespace-normalised.

    Raises:
        InvalidQuestionError: not a string, empty, or longer than ``max_chars``.
    """
    if not isinstance(question, str):
        raise InvalidQuestionError(f"question must be a string, got {type(question).__name__}")
    question = " ".join(question.split())
    if not question:
        raise InvalidQuestionError("question is empty")
    if len(question) > max_chars:
        raise InvalidQuestionError(
            f"question is {len(question)} characters long; the limit is {max_chars} (raise it with max_question_chars=)"
        )
    return question


def task_question(question: str, task: str) -> str:
    """The question as the prompts show it, with the task's answer-format suffix (Figures 9-10)."""
    suffix = QUESTION_SUFFIXES.get(task, "")
    if suffix and suffix.strip(" ?").lower() not in question.lower():
        return question + suffix
    return question


def trace_config(step: str, rnd: int, **extra: Any) -> RunnableConfig:
    """The run config of one traced step: its name, ``searchain_step``/``searchain_round`` metadata and tags."""
    return {
        "run_name": step,
        "metadata": {"searchain_step": step, "searchain_round": rnd, **extra},
        "tags": [f"searchain:{step}", f"searchain:round:{rnd}"],
    }


def ir_verdict(node: ChainNode, result: dict[str, Any], knobs: dict[str, Any]) -> dict[str, Any]:
    """Algorithm 1's ``IR(q_i, a_i)``: pass, correction or completion for one node.

    Args:
        node: The CoQ node (``query``, ``answer``, ``unsolved``).
        result: What IR found: ``document`` (a dict, or ``None``), the reader's ``answer`` *g*
            and ``confidence`` *f*.
        knobs: ``completion``, ``verification``, ``confidence_threshold`` (θ),
            ``rouge_threshold`` (α) and ``task``.

    Returns:
        ``{"action": ...}``: ``"completion"`` for an unsolved query (whatever *f*);
        ``"correction"`` when ``f > θ`` and *g* is not in the LLM's answer (long form:
        ROUGE-L of answer and passage < α); ``"pass"`` otherwise; ``"no_passage"`` or
        ``"unsolved_kept"`` when there is nothing to do.
    """
    doc, g, f = result["document"], result["answer"] or "", result["confidence"]
    if doc is None:
        return {"action": "no_passage"}
    if node["unsolved"]:
        return {"action": "completion" if knobs["completion"] else "unsolved_kept"}
    if not knobs["verification"] or f is None or not f > knobs["confidence_threshold"] or not g:
        return {"action": "pass"}
    if knobs["task"] == "longform":
        score = rouge_l(node["answer"] or "", doc["page_content"])
        consistent = score >= knobs["rouge_threshold"]
        return {"action": "pass" if consistent else "correction", "rouge_l": score}
    return {"action": "pass" if answer_contains(node["answer"], g) else "correction"}


def normalized_duplicate(query: str, processed: Sequence[str]) -> bool:
    """Default ``DuplicateQuery``: the query equals a processed one after SQuAD normalisation."""
    norm = normalize_answer(query)
    return any(norm == normalize_answer(p) for p in processed)


def rouge_l(prediction: str, reference: str) -> float:
    """ROUGE-L F-measure (``rouge-score``, with stemming)."""
    return float(_ROUGE.score(reference, prediction)["rougeL"].fmeasure)


def empty_usage() -> Usage:
    """Zero counts for every :class:`Usage` field."""
    return {
        "llm_calls": 0,
        "words_in": 0,
        "words_out": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "retrieval_calls": 0,
        "reader_calls": 0,
    }


def doc_dict(doc: Document) -> DocumentDict:
    """A ``Document`` as plain data (msgpack-serialisable state)."""
    return {"page_content": doc.page_content, "metadata": dict(doc.metadata)}


def to_messages(messages: Sequence[dict[str, str]]) -> list[BaseMessage]:
    """``{"role", "content"}`` dicts (as kept in state) to LangChain messages."""
    return [AIMessage(m["content"]) if m["role"] == "assistant" else HumanMessage(m["content"]) for m in messages]


def message_text(message: BaseMessage) -> str:
    """The text of a message, whatever its content blocks."""
    return message.text if isinstance(message.text, str) else str(message.content)


def count_usage(usage: Usage, sent: Sequence[BaseMessage], reply: BaseMessage) -> Usage:
    """``usage`` plus one LLM call: words of ``sent`` and ``reply``, and the reply's token counts."""
    usage = dict(usage)  # type: ignore[assignment]
    usage["llm_calls"] += 1
    usage["words_in"] += word_count([message_text(m) for m in sent])
    usage["words_out"] += word_count(message_text(reply))
    meta = getattr(reply, "usage_metadata", None) or {}
    usage["input_tokens"] += int(meta.get("input_tokens", 0) or 0)
    usage["output_tokens"] += int(meta.get("output_tokens", 0) or 0)
    return usage


class _SearChain:
    """The node functions, bound to one LLM, retriever and reader."""

    def __init__(
        self,
        llm: BaseChatModel,
        retriever: BaseRetriever,
        reader: Reader,
        defaults: SearChainContext,
        is_duplicate: QueryMatcher,
    ) -> None:
        self.llm = llm
        self.retriever = retriever
        self.reader = reader
        self.defaults = defaults
        self.is_duplicate = is_duplicate
        self.judge = RunnableLambda(self._judge, name="ir_check_node")
        self.read = RunnableLambda(self._read, afunc=self._aread, name="read")

    # -- helpers -----------------------------------------------------------------------------------
    def context(self) -> SearChainContext:
        try:
            ctx = get_runtime(SearChainContext).context
        except RuntimeError:
            ctx = None
        if ctx is None:
            return self.defaults
        if not isinstance(ctx, SearChainContext):
            raise TypeError(f"context must be a SearChainContext, got {type(ctx).__name__}")
        return ctx.merged_with(self.defaults).validate()

    @staticmethod
    def _config(step: str, rnd: int, **extra: Any) -> RunnableConfig:
        return trace_config(step, rnd, **extra)

    def _question(self, state: SearChainState, ctx: SearChainContext) -> str:
        return validate_question(state.get("question"), ctx.max_question_chars or 0)

    @staticmethod
    def _task_question(question: str, task: str) -> str:
        return task_question(question, task)

    # -- coq_generation ------------------------------------------------------------------------------
    def _coq_prepare(self, state: SearChainState) -> tuple[dict[str, Any], list[BaseMessage], RunnableConfig]:
        ctx = self.context()
        # Only the feedback node leads here with feedback pending; anything else (including a new
        # invocation on a checkpointed thread, which tracing left with feedback=None) is a new run.
        rnd = int(state.get("rounds") or 0) + 1 if state.get("feedback") else 1
        update: dict[str, Any] = {"rounds": rnd}
        if rnd == 1:
            question = self._question(state, ctx)
            prompt = COQ_PROMPTS[str(ctx.task)].format(question=self._task_question(question, str(ctx.task)))
            messages = [{"role": "user", "content": prompt}]
            update.update(
                question=question,
                processed=[],
                references=[],
                tree=[],
                warnings=[],
                ir_cache={},
                feedback=None,
                usage=empty_usage(),
            )
        else:
            messages = list(state.get("messages") or [])
        lc_messages = to_messages(messages)
        update["messages"] = messages
        return update, lc_messages, self._config("coq_generation", rnd)

    def _coq_finish(
        self, state: SearChainState, update: dict[str, Any], sent: list[BaseMessage], reply: BaseMessage
    ) -> dict[str, Any]:
        rnd = update["rounds"]
        raw = message_text(reply)
        parsed = parse_chain(raw)
        feedback = state.get("feedback") if rnd > 1 else None
        parent = (
            {"round": rnd - 1, "node": feedback["node"], "query": feedback["query"], "kind": feedback["kind"]}
            if feedback
            else None
        )
        branch: Branch = {
            "round": rnd,
            "parent": parent,
            "nodes": parsed.nodes,
            "final_content": parsed.final_content,
            "raw": raw,
            "checks": [],
        }
        tree = list(update.get("tree", state.get("tree") or [])) + [branch]
        warnings = list(update.get("warnings", state.get("warnings") or []))
        warnings += [f"round {rnd}: {w}" for w in parsed.warnings]
        usage = count_usage(update.get("usage", state.get("usage") or empty_usage()), sent, reply)
        return {
            **update,
            "messages": update["messages"] + [{"role": "assistant", "content": raw}],
            "chain": parsed.nodes,
            "tree": tree,
            "warnings": warnings,
            "usage": usage,
            "feedback": None,
        }

    def coq_generation(self, state: SearChainState) -> dict[str, Any]:
        update, sent, config = self._coq_prepare(state)
        return self._coq_finish(state, update, sent, self.llm.invoke(sent, config=config))

    async def acoq_generation(self, state: SearChainState) -> dict[str, Any]:
        update, sent, config = self._coq_prepare(state)
        return self._coq_finish(state, update, sent, await self.llm.ainvoke(sent, config=config))

    # -- ir_check ----------------------------------------------------------------------------------
    def _ir_todo(self, state: SearChainState) -> list[ChainNode]:
        """The chain's nodes that Algorithm 1 would hand to IR (not duplicates of *M*)."""
        seen = list(state.get("processed") or [])
        todo = []
        for node in state.get("chain") or []:
            if self.is_duplicate(node["query"], seen):
                continue
            todo.append(node)
            seen.append(node["query"])
        return todo

    def _read(self, pairs: list[tuple[str, str]]) -> list[tuple[str, float]]:
        return [tuple(o) for o in read_pairs(self.reader, pairs)]  # type: ignore[misc]

    async def _aread(self, pairs: list[tuple[str, str]]) -> list[tuple[str, float]]:
        return [tuple(o) for o in await aread_pairs(self.reader, pairs)]  # type: ignore[misc]

    def _ir_prepare(self, state: SearChainState) -> tuple[list[ChainNode], list[str], dict[str, Any]]:
        cache = dict(state.get("ir_cache") or {})
        todo = self._ir_todo(state)
        queries = list(dict.fromkeys(n["query"] for n in todo if n["query"] not in cache))
        return todo, queries, cache

    def _store_docs(
        self, cache: dict[str, Any], queries: list[str], results: Sequence[Sequence[Document]]
    ) -> list[tuple[str, str]]:
        pairs = []
        for query, docs in zip(queries, results, strict=True):
            doc = docs[0] if docs else None
            cache[query] = {"document": doc_dict(doc) if doc else None, "answer": "", "confidence": None}
            if doc is not None:
                pairs.append((query, passage_text(doc)))
        return pairs

    @staticmethod
    def _store_reads(cache: dict[str, Any], pairs: list[tuple[str, str]], outputs: Sequence[tuple[str, float]]) -> None:
        for (query, _), (answer, confidence) in zip(pairs, outputs, strict=True):
            cache[query]["answer"] = answer
            cache[query]["confidence"] = confidence

    def _retrieve_configs(self, queries: list[str], rnd: int) -> list[RunnableConfig]:
        return [self._config("retrieve", rnd, searchain_query=q) for q in queries]

    def _judge(self, item: dict[str, Any]) -> dict[str, Any]:
        return ir_verdict(item["node"], item["result"], item["context"])

    @staticmethod
    def _knobs(ctx: SearChainContext) -> dict[str, Any]:
        return {
            "completion": bool(ctx.completion),
            "verification": bool(ctx.verification),
            "confidence_threshold": float(ctx.confidence_threshold or 0.0),
            "rouge_threshold": float(ctx.rouge_threshold or 0.0),
            "task": ctx.task,
        }

    def _ir_finish(
        self,
        state: SearChainState,
        todo: list[ChainNode],
        cache: dict[str, Any],
        retrievals: int,
        reads: int,
        ctx: SearChainContext,
    ) -> Command[Literal["feedback", "tracing"]]:
        rnd = int(state.get("rounds") or 1)
        processed = list(state.get("processed") or [])
        path: list[Reference] = list(state.get("references") or [])
        warnings = list(state.get("warnings") or [])
        checks: list[dict[str, object]] = []
        feedback: Feedback | None = None
        knobs = self._knobs(ctx)
        for node in todo:
            result = cache[node["query"]]
            verdict = self.judge.invoke(
                {"node": node, "result": result, "context": knobs},
                config=self._config("ir_check_node", rnd, searchain_node=node["index"]),
            )
            action = verdict["action"]
            processed.append(node["query"])
            checks.append(
                {
                    "node": node["index"],
                    "query": node["query"],
                    "action": action,
                    "reader_answer": result["answer"],
                    "confidence": result["confidence"],
                    **({"rouge_l": verdict["rouge_l"]} if "rouge_l" in verdict else {}),
                }
            )
            if action == "no_passage":
                warnings.append(f"round {rnd}: no passage retrieved for {node['query'][:80]!r}")
                if node["unsolved"]:
                    continue
            if action == "unsolved_kept":
                continue
            source = {"completion": "completed", "correction": "corrected"}.get(action, "llm")
            answer = result["answer"] if source != "llm" else (node["answer"] or "")
            path.append(
                {
                    "index": len(path) + 1,
                    "query": node["query"],
                    "answer": answer,
                    "source": source,  # type: ignore[typeddict-item]
                    "document": result["document"],
                    "confidence": result["confidence"],
                    "reader_answer": result["answer"],
                    "round": rnd,
                }
            )
            if action in ("completion", "correction"):
                doc = result["document"]
                feedback = {
                    "kind": action,
                    "node": node["index"],
                    "query": node["query"],
                    "answer": result["answer"],
                    "llm_answer": node["answer"],
                    "passage": passage_text(Document(page_content=doc["page_content"], metadata=doc["metadata"])),
                    "confidence": float(result["confidence"]),
                    "message": "",
                }
                break
        tree = list(state.get("tree") or [])
        if tree:
            tree[-1] = {**tree[-1], "checks": checks}
        usage: Usage = {**(state.get("usage") or empty_usage())}
        usage["retrieval_calls"] += retrievals
        usage["reader_calls"] += reads
        update = {
            "processed": processed,
            "references": path,
            "feedback": feedback,
            "ir_cache": cache,
            "tree": tree,
            "warnings": warnings,
            "usage": usage,
        }
        max_rounds = int(ctx.max_rounds or 1)
        if feedback is not None and rnd >= max_rounds:
            update["warnings"] = warnings + [
                f"round {rnd}: stopped at max_rounds={max_rounds} with a pending {feedback['kind']}"
            ]
        goto: Literal["feedback", "tracing"] = "feedback" if feedback is not None and rnd < max_rounds else "tracing"
        return Command(update=update, goto=goto)

    def ir_check(self, state: SearChainState) -> Command[Literal["feedback", "tracing"]]:
        ctx = self.context()
        rnd = int(state.get("rounds") or 1)
        todo, queries, cache = self._ir_prepare(state)
        results = self.retriever.batch(queries, config=self._retrieve_configs(queries, rnd)) if queries else []
        pairs = self._store_docs(cache, queries, results)
        if pairs:
            self._store_reads(cache, pairs, self.read.invoke(pairs, config=self._config("read", rnd)))
        return self._ir_finish(state, todo, cache, len(queries), len(pairs), ctx)

    async def air_check(self, state: SearChainState) -> Command[Literal["feedback", "tracing"]]:
        ctx = self.context()
        rnd = int(state.get("rounds") or 1)
        todo, queries, cache = self._ir_prepare(state)
        results = await self.retriever.abatch(queries, config=self._retrieve_configs(queries, rnd)) if queries else []
        pairs = self._store_docs(cache, queries, results)
        if pairs:
            self._store_reads(cache, pairs, await self.read.ainvoke(pairs, config=self._config("read", rnd)))
        return self._ir_finish(state, todo, cache, len(queries), len(pairs), ctx)

    # -- feedback ----------------------------------------------------------------------------------
    def feedback(self, state: SearChainState) -> dict[str, Any]:
        """Render the paper's correction/completion prompt and add it to the conversation."""
        ctx = self.context()
        fb = state.get("feedback")
        if fb is None:  # unreachable through the graph's own edges
            return {}
        template = CORRECTION_PROMPT if fb["kind"] == "correction" else COMPLETION_PROMPT
        message = template.format(
            query=fb["query"],
            answer=fb["answer"] or "given in the Reference",
            question=self._task_question(state["question"], str(ctx.task)),
            reference=fb["passage"],
        )
        return {
            "feedback": {**fb, "message": message},
            "messages": list(state.get("messages") or []) + [{"role": "user", "content": message}],
        }

    async def afeedback(self, state: SearChainState) -> dict[str, Any]:
        return self.feedback(state)

    # -- tracing -----------------------------------------------------------------------------------
    def _tracing_prepare(self, state: SearChainState) -> tuple[list[BaseMessage] | None, RunnableConfig]:
        ctx = self.context()
        path = state.get("references") or []
        if not path:
            return None, {}
        pairs = "\n".join(TRACING_PAIR.format(index=r["index"], query=r["query"], answer=r["answer"]) for r in path)
        question = self._task_question(state["question"], str(ctx.task))
        prompt = TRACING_PROMPT.format(question=question, pairs=pairs)
        return [HumanMessage(prompt)], self._config("tracing", int(state.get("rounds") or 1))

    def _tracing_finish(
        self, state: SearChainState, sent: list[BaseMessage] | None, reply: BaseMessage | None
    ) -> dict[str, Any]:
        task = str(self.context().task)
        path = list(state.get("references") or [])
        tree = state.get("tree") or []
        warnings = list(state.get("warnings") or [])
        usage = state.get("usage") or empty_usage()
        last: Branch | None = tree[-1] if tree else None
        chain_content = last["final_content"] if last else None

        def fallback_answer(content: str | None) -> str:
            # Most specific first: the traced "final answer is", the chain's own, the last answer
            # on the path, then the last answer the LLM wrote in its newest chain.
            return (
                extract_final_answer(content, task)
                or extract_final_answer(chain_content, task)
                or next((r["answer"] for r in reversed(path) if r["answer"]), "")
                or next((n["answer"] for n in reversed(last["nodes"] if last else []) if n["answer"]), "")
            )

        if reply is None or sent is None:
            content = chain_content or " ".join((last["raw"] if last else "").split())
            warnings.append("no node reached the correct path; the final content is the LLM's own, uncited")
        else:
            usage = count_usage(usage, sent, reply)
            raw = message_text(reply)
            content = parse_chain(raw).final_content or " ".join(raw.split())
            content, bad = drop_invalid_citations(content, len(path))
            if bad:
                warnings.append(f"tracing cited passages that do not exist: {sorted(set(bad))}; removed")
            if not citations(content):
                content = self._compose(path, fallback_answer(content))
                warnings.append("the tracing output cited no passage; the final content was composed from the path")
        return {
            "feedback": None,
            "final_content": content,
            "answer": fallback_answer(content) or content,
            "references": path,
            "warnings": warnings,
            "usage": usage,
        }

    @staticmethod
    def _compose(path: Sequence[Reference], answer: str) -> str:
        """Final content written from *R* itself: one cited sentence per step."""
        steps = []
        for ref in path:
            said = ref["answer"].strip().rstrip(".") or "not found in the passage"
            steps.append(f"{ref['query'].rstrip(' ?')}: {said} [{ref['index']}].")
        return " ".join(steps) + (f" So the final answer is {answer.strip().rstrip('.')}." if answer else "")

    def tracing(self, state: SearChainState) -> dict[str, Any]:
        sent, config = self._tracing_prepare(state)
        reply = self.llm.invoke(sent, config=config) if sent else None
        return self._tracing_finish(state, sent, reply)

    async def atracing(self, state: SearChainState) -> dict[str, Any]:
        sent, config = self._tracing_prepare(state)
        reply = await self.llm.ainvoke(sent, config=config) if sent else None
        return self._tracing_finish(state, sent, reply)


def create_searchain_graph(
    llm: BaseChatModel,
    retriever: BaseRetriever,
    reader: Reader,
    *,
    max_rounds: int = 5,
    confidence_threshold: float | None = None,
    rouge_threshold: float = 0.35,
    task: str = "multihop",
    verification: bool = True,
    completion: bool = True,
    is_duplicate: QueryMatcher | None = None,
    max_question_chars: int = 2000,
    retry_policy: RetryPolicy | None = None,
    checkpointer: BaseCheckpointSaver[Any] | bool | None = None,
    name: str = "searchain",
) -> CompiledStateGraph[SearChainState, SearChainContext, InputState, OutputState]:
    """Build SearChain (Search-in-the-Chain, Xu et al. WWW 2024) as a compiled LangGraph graph.

    The result is a LangChain Runnable: ``invoke``, ``ainvoke``, ``batch``, ``stream`` (each
    round shows in ``stream_mode="updates"``) and use as a node of a larger graph all work.

    Args:
        llm: Any LangChain chat model; it writes the Chain-of-Query and the traced answer.
        retriever: Any LangChain retriever; its first document is the top-1 passage ``d_i``.
        reader: Extracts ``g`` and ``f`` from a passage (``read``, optionally ``read_batch``).
        max_rounds: Most LLM-IR interaction rounds (the paper's ``r_max`` = 5).
        confidence_threshold: θ: IR corrects an answer only when ``f > θ``. ``None`` takes the
            reader's ``default_threshold`` (1.5 for every reader here: the paper's value for the
            DPR reader's relevance logit, and p > 0.82 on the log-odds scale of ``LLMReader`` and
            ``ExtractiveQAReader``; see ``docs/method.md``), or 1.5 when the reader has none.
        rouge_threshold: α: for ``task="longform"`` an answer is inconsistent with its passage
            when ROUGE-L < α (0.35 in the paper).
        task: ``multihop``, ``yesno`` (StrategyQA), ``fact`` (FEVER), ``longform`` (ELI5) or
            ``slot_filling`` (zsRE/T-REx); it selects the paper's CoQ prompt.
        verification: Set False for the paper's "w/o Verification" ablation.
        completion: Set False for the paper's "w/o Completion" ablation.
        is_duplicate: ``DuplicateQuery`` of Algorithm 1, ``(query, processed) -> bool``; by default
            a query is a duplicate when it equals a processed one after normalisation.
        max_question_chars: Longer questions raise :class:`InvalidQuestionError`.
        retry_policy: Retry policy for the nodes that call the LLM, retriever or reader.
        checkpointer: Passed to ``compile``; the state is msgpack-serialisable.
        name: The graph's run name in traces.

    Returns:
        The compiled graph. Input ``{"question": str}``; output ``answer``, ``final_content``,
        ``references``, ``rounds``, ``tree``, ``usage`` and ``warnings``. Per-run overrides go
        in ``context=SearChainContext(...)``.

    Example:
        >>> graph = create_searchain_graph(llm, retriever, LLMReader(llm))  # doctest: +SKIP
        >>> out = graph.invoke({"question": "Where was the performer of Spirit If... born?"})  # doctest: +SKIP
        >>> out["final_content"]  # doctest: +SKIP
        'The performer of Spirit If... is Kevin Drew [1]. Kevin Drew was born in Toronto [2]. ...'
    """
    if not isinstance(llm, BaseChatModel):
        raise TypeError(f"llm must be a LangChain BaseChatModel, got {type(llm).__name__}")
    if not isinstance(retriever, BaseRetriever):
        raise TypeError(f"retriever must be a LangChain BaseRetriever, got {type(retriever).__name__}")
    if not callable(getattr(reader, "read", None)):
        raise TypeError(f"reader must have a read(query, passage) method, got {type(reader).__name__}")
    if confidence_threshold is None:
        confidence_threshold = float(getattr(reader, "default_threshold", DEFAULT_THRESHOLD))
    defaults = SearChainContext(
        max_rounds=max_rounds,
        confidence_threshold=confidence_threshold,
        rouge_threshold=rouge_threshold,
        task=task,
        verification=verification,
        completion=completion,
        max_question_chars=max_question_chars,
    ).validate()
    nodes = _SearChain(llm, retriever, reader, defaults, is_duplicate or normalized_duplicate)

    builder = StateGraph(
        SearChainState, context_schema=SearChainContext, input_schema=InputState, output_schema=OutputState
    )
    builder.add_node(
        "coq_generation",
        RunnableLambda(nodes.coq_generation, afunc=nodes.acoq_generation, name="coq_generation"),
        retry_policy=retry_policy,
    )
    builder.add_node(
        "ir_check",
        RunnableLambda(nodes.ir_check, afunc=nodes.air_check, name="ir_check"),
        destinations=("feedback", "tracing"),
        retry_policy=retry_policy,
    )
    builder.add_node("feedback", RunnableLambda(nodes.feedback, afunc=nodes.afeedback, name="feedback"))
    builder.add_node(
        "tracing",
        RunnableLambda(nodes.tracing, afunc=nodes.atracing, name="tracing"),
        retry_policy=retry_policy,
    )
    builder.add_edge(START, "coq_generation")
    builder.add_edge("coq_generation", "ir_check")
    builder.add_edge("feedback", "coq_generation")
    builder.add_edge("tracing", END)
    return builder.compile(checkpointer=checkpointer, name=name)
