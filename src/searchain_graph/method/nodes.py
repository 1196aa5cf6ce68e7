"""The steps of a SearChain round (Algorithm 1), as LangGraph nodes.

Algorithm 1's ``Main`` loop is the graph's cycle::

    coq_generation -> ir_check -> feedback -> coq_generation -> ... -> tracing

* :meth:`SearChainNodes.coq_generation` is ``ChainGenerate(Q, F)`` (Section 3.2): the LLM writes a
  whole Chain-of-Query; after feedback it continues the conversation, so the new chain is a new
  branch of the Tree-of-Reasoning *T* rooted at the node IR fed back (``T.AddChild(CoQ)``).
* :meth:`SearChainNodes.ir_check` is ``Traverse(CoQ)`` with ``IR(q_i, a_i)`` (Section 3.3): the
  top-1 passage is retrieved for every query not yet in *M*, the reader extracts *g* and *f* for
  all of them in one batch, and the nodes are judged in order (:func:`~.verdict.ir_verdict`). Each
  judged node joins *R* with its passage; the first that needs feedback ends the traversal.
* :meth:`SearChainNodes.feedback` renders ``PromptForVerify``/``PromptForComplete`` (Figure 3).
* :meth:`SearChainNodes.tracing` is ``Tracing(T, R)``: a last generation writes the final content
  with ``[n]`` citations of *R*'s passages.

Each step returns only what it adds; the reducers of :mod:`~searchain_graph.method.state` keep the
rest. Each has a sync and an async body (the async one awaits the LLM, retriever and reader), and
both share the pure parts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.retrievers import BaseRetriever
from langchain_core.runnables import RunnableLambda
from langgraph.runtime import Runtime
from langgraph.types import Command

from searchain_graph.ir.readers.base import Reader, ReaderOutput, aread_pairs, passage_of, read_pairs, usable_confidence
from searchain_graph.method.calls import (
    call_usage,
    doc_dict,
    label_node_run,
    message_text,
    to_messages,
    trace_config,
)
from searchain_graph.method.context import SearChainContext
from searchain_graph.method.parsing import citations, drop_invalid_citations, extract_final_answer, parse_chain
from searchain_graph.method.prompts import (
    COMPLETION_PROMPT,
    COQ_PROMPTS,
    CORRECTION_PROMPT,
    TRACING_PAIR,
    TRACING_PROMPT,
)
from searchain_graph.method.question import task_question, validate_question
from searchain_graph.method.state import (
    Branch,
    ChainNode,
    DocumentDict,
    Feedback,
    Reference,
    SearChainState,
    new_run,
)
from searchain_graph.method.verdict import (
    IRResult,
    QueryMatcher,
    check_record,
    feedback_for,
    ir_verdict,
    path_entry,
)


class SearChainNodes:
    """Algorithm 1's steps, bound to one LLM, retriever and reader.

    Args:
        llm: Writes the Chain-of-Query and the traced final content.
        retriever: Its first document for a query is the top-1 passage ``d_i``.
        reader: Extracts ``g`` and ``f`` from a passage.
        defaults: The factory's settings; a run's ``context`` overrides them field by field.
        is_duplicate: ``DuplicateQuery(q_i, M)``.
    """

    def __init__(
        self,
        llm: BaseChatModel,
        retriever: BaseRetriever,
        reader: Reader,
        *,
        defaults: SearChainContext,
        is_duplicate: QueryMatcher,
    ) -> None:
        self.llm = llm
        self.retriever = retriever
        self.defaults = defaults
        self.is_duplicate = is_duplicate

        # The read run takes (query, document dict) pairs, plain data like the state; the reader
        # gets (query, Passage) pairs, the title from the document's metadata.
        def read(pairs: list[tuple[str, DocumentDict]]) -> list[ReaderOutput]:
            return read_pairs(reader, [(q, passage_of(d)) for q, d in pairs])

        async def aread(pairs: list[tuple[str, DocumentDict]]) -> list[ReaderOutput]:
            return await aread_pairs(reader, [(q, passage_of(d)) for q, d in pairs])

        # Their own runs in a trace: one reading per round, one verdict per node.
        self.read = RunnableLambda(read, afunc=aread, name="read")
        self.judge: RunnableLambda[dict[str, Any], dict[str, Any]] = RunnableLambda(
            lambda item: ir_verdict(**item), name="ir_check_node"
        )

    def settings(self, runtime: Runtime[SearChainContext] | None) -> SearChainContext:
        """The run's context, with the factory's value for every field it leaves unset.

        Raises:
            TypeError: the context is not a :class:`SearChainContext`.
        """
        ctx = runtime.context if runtime is not None else None
        if ctx is None:
            return self.defaults
        if not isinstance(ctx, SearChainContext):
            raise TypeError(f"context must be a SearChainContext, got {type(ctx).__name__}")
        return ctx.merged_with(self.defaults).validate()

    # -- ChainGenerate(Q, F) ----------------------------------------------------------------------
    def coq_generation(self, state: SearChainState, runtime: Runtime[SearChainContext]) -> dict[str, Any]:
        """Round 1: the CoQ prompt for the question; later rounds: the conversation after feedback."""
        rnd, question, sent = self._coq_request(state, self.settings(runtime))
        reply = self.llm.invoke(sent, config=trace_config("coq_generation", rnd, named=False))
        return _new_branch(state, rnd, question, sent, reply)

    async def acoq_generation(self, state: SearChainState, runtime: Runtime[SearChainContext]) -> dict[str, Any]:
        """Async :meth:`coq_generation`."""
        rnd, question, sent = self._coq_request(state, self.settings(runtime))
        reply = await self.llm.ainvoke(sent, config=trace_config("coq_generation", rnd, named=False))
        return _new_branch(state, rnd, question, sent, reply)

    @staticmethod
    def _coq_request(state: SearChainState, ctx: SearChainContext) -> tuple[int, str, list[BaseMessage]]:
        # Only the feedback node leads here with feedback pending; anything else (including a new
        # invocation on a checkpointed thread, which tracing left with feedback=None) is a new run.
        rnd = int(state.get("rounds") or 0) + 1 if state.get("feedback") else 1
        label_node_run("coq_generation", rnd)
        if rnd > 1:
            return rnd, state["question"], to_messages(state.get("messages") or [])
        question = validate_question(state.get("question"), ctx.max_question_chars or 0)
        prompt = COQ_PROMPTS[str(ctx.task)].format(question=task_question(question, str(ctx.task)))
        return rnd, question, [HumanMessage(prompt)]

    # -- Traverse(CoQ), IR(q_i, a_i) --------------------------------------------------------------
    def ir_check(
        self, state: SearChainState, runtime: Runtime[SearChainContext]
    ) -> Command[Literal["feedback", "tracing"]]:
        """Retrieve and read every new query of the chain, then judge its nodes in order."""
        rnd, todo, queries = self._ir_request(state)
        docs = self.retriever.batch(queries, config=_retrieve_configs(queries, rnd)) if queries else []
        found, pairs = _top_passages(queries, docs)
        if pairs:
            _store_reads(found, pairs, self.read.invoke(pairs, config=trace_config("read", rnd)))
        return self._traverse(state, self.settings(runtime), todo, found, len(pairs))

    async def air_check(
        self, state: SearChainState, runtime: Runtime[SearChainContext]
    ) -> Command[Literal["feedback", "tracing"]]:
        """Async :meth:`ir_check`."""
        rnd, todo, queries = self._ir_request(state)
        docs = await self.retriever.abatch(queries, config=_retrieve_configs(queries, rnd)) if queries else []
        found, pairs = _top_passages(queries, docs)
        if pairs:
            _store_reads(found, pairs, await self.read.ainvoke(pairs, config=trace_config("read", rnd)))
        return self._traverse(state, self.settings(runtime), todo, found, len(pairs))

    def _ir_request(self, state: SearChainState) -> tuple[int, list[ChainNode], list[str]]:
        """The round, the chain's nodes not in *M* (``DuplicateQuery``), and the queries to retrieve."""
        rnd = int(state.get("rounds") or 1)
        label_node_run("ir_check", rnd)
        seen = list(state.get("processed") or [])
        todo = []
        for node in state.get("chain") or []:
            if not self.is_duplicate(node["query"], seen):
                todo.append(node)
                seen.append(node["query"])
        known = state.get("ir_cache") or {}
        return rnd, todo, list(dict.fromkeys(n["query"] for n in todo if n["query"] not in known))

    def _traverse(
        self,
        state: SearChainState,
        ctx: SearChainContext,
        todo: list[ChainNode],
        found: dict[str, IRResult],
        reads: int,
    ) -> Command[Literal["feedback", "tracing"]]:
        """Judge the nodes in order; each joins *M* and *R*; the first correction or completion stops."""
        rnd = int(state.get("rounds") or 1)
        results = {**(state.get("ir_cache") or {}), **found}
        theta = float(ctx.confidence_threshold or 0.0)
        knobs = {
            "completion": bool(ctx.completion),
            "verification": bool(ctx.verification),
            "confidence_threshold": theta,
            "rouge_threshold": float(ctx.rouge_threshold or 0.0),
            "task": ctx.task,
            "verify_yes_no": bool(ctx.verify_yes_no),
        }
        processed: list[str] = []
        path: list[Reference] = []
        checks: list[dict[str, object]] = []
        warnings: list[str] = []
        feedback: Feedback | None = None
        first_index = len(state.get("references") or []) + 1
        for node in todo:
            result = results[node["query"]]
            verdict = self.judge.invoke(
                {"node": node, "result": result, "knobs": knobs},
                config=trace_config("ir_check_node", rnd, searchain_node=node["index"]),
            )
            action = verdict["action"]
            processed.append(node["query"])
            checks.append(check_record(node, result, verdict, theta))
            if action == "no_passage":
                warnings.append(f"round {rnd}: no passage retrieved for {node['query'][:80]!r}")
                if node["unsolved"]:
                    continue
            if action == "unsolved_kept":
                continue
            path.append(path_entry(first_index + len(path), node, result, action, rnd))
            if action in ("completion", "correction"):
                feedback = feedback_for(action, node, result)
                break
        max_rounds = int(ctx.max_rounds or 1)
        if feedback is not None and rnd >= max_rounds:
            warnings.append(f"round {rnd}: stopped at max_rounds={max_rounds} with a pending {feedback['kind']}")
        update = {
            "processed": processed,
            "references": path,
            "feedback": feedback,
            "ir_cache": found,
            "tree": [{"round": rnd, "checks": checks}],
            "warnings": warnings,
            "usage": {"retrieval_calls": len(found), "reader_calls": reads},
        }
        goto: Literal["feedback", "tracing"] = "feedback" if feedback is not None and rnd < max_rounds else "tracing"
        return Command(update=update, goto=goto)

    # -- PromptForVerify / PromptForComplete -------------------------------------------------------
    def feedback(self, state: SearChainState, runtime: Runtime[SearChainContext]) -> dict[str, Any]:
        """Render the paper's correction or completion prompt and add it to the conversation."""
        label_node_run("feedback", int(state.get("rounds") or 1))
        fb = state.get("feedback")
        if fb is None:  # unreachable through the graph's own edges
            return {}
        template = CORRECTION_PROMPT if fb["kind"] == "correction" else COMPLETION_PROMPT
        message = template.format(
            query=fb["query"],
            answer=fb["answer"] or "given in the Reference",
            question=task_question(state["question"], str(self.settings(runtime).task)),
            reference=fb["passage"],
        )
        return {"feedback": {**fb, "message": message}, "messages": [{"role": "user", "content": message}]}

    async def afeedback(self, state: SearChainState, runtime: Runtime[SearChainContext]) -> dict[str, Any]:
        """Async :meth:`feedback` (no I/O)."""
        return self.feedback(state, runtime)

    # -- Tracing(T, R) -----------------------------------------------------------------------------
    def tracing(self, state: SearChainState, runtime: Runtime[SearChainContext]) -> dict[str, Any]:
        """Write the final content over *R*, citing each step's passage as ``[n]``."""
        task, sent = self._tracing_request(state, self.settings(runtime))
        reply = (
            self.llm.invoke(sent, config=trace_config("tracing", int(state.get("rounds") or 1), named=False))
            if sent
            else None
        )
        return _final_content(state, task, sent, reply)

    async def atracing(self, state: SearChainState, runtime: Runtime[SearChainContext]) -> dict[str, Any]:
        """Async :meth:`tracing`."""
        task, sent = self._tracing_request(state, self.settings(runtime))
        config = trace_config("tracing", int(state.get("rounds") or 1), named=False)
        reply = await self.llm.ainvoke(sent, config=config) if sent else None
        return _final_content(state, task, sent, reply)

    @staticmethod
    def _tracing_request(state: SearChainState, ctx: SearChainContext) -> tuple[str, list[BaseMessage] | None]:
        label_node_run("tracing", int(state.get("rounds") or 1))
        path = state.get("references") or []
        if not path:
            return str(ctx.task), None
        pairs = "\n".join(TRACING_PAIR.format(index=r["index"], query=r["query"], answer=r["answer"]) for r in path)
        prompt = TRACING_PROMPT.format(question=task_question(state["question"], str(ctx.task)), pairs=pairs)
        return str(ctx.task), [HumanMessage(prompt)]


def _new_branch(
    state: SearChainState, rnd: int, question: str, sent: list[BaseMessage], reply: BaseMessage
) -> dict[str, Any]:
    """``T.AddChild(CoQ)``: the parsed chain as a new branch, rooted where the feedback came from."""
    raw = message_text(reply)
    parsed = parse_chain(raw)
    fb = state.get("feedback") if rnd > 1 else None
    branch: Branch = {
        "round": rnd,
        "parent": {"round": rnd - 1, "node": fb["node"], "query": fb["query"], "kind": fb["kind"]} if fb else None,
        "nodes": parsed.nodes,
        "final_content": parsed.final_content,
        "raw": raw,
        "checks": [],
    }
    warnings = [f"round {rnd}: {w}" for w in parsed.warnings]
    said = {"role": "assistant", "content": raw}
    added = {"tree": [branch], "warnings": warnings, "usage": call_usage(sent, reply)}
    if rnd == 1:
        prompt = {"role": "user", "content": message_text(sent[0])}
        added = new_run(messages=[prompt, said], **added)
    else:
        added["messages"] = [said]
    return {**added, "question": question, "rounds": rnd, "chain": parsed.nodes, "feedback": None}


def _retrieve_configs(queries: Sequence[str], rnd: int) -> list[Any]:
    return [trace_config("retrieve", rnd, searchain_query=q) for q in queries]


def _top_passages(
    queries: Sequence[str], results: Sequence[Sequence[Document]]
) -> tuple[dict[str, IRResult], list[tuple[str, DocumentDict]]]:
    """``d_i = Retrieval(q_i)``: the top-1 passage of each query, and the (query, document) pairs to read."""
    found: dict[str, IRResult] = {}
    pairs = []
    for query, docs in zip(queries, results, strict=True):
        doc = doc_dict(docs[0]) if docs else None
        found[query] = {"document": doc, "answer": "", "confidence": None}
        if doc is not None:
            pairs.append((query, doc))
    return found, pairs


def _store_reads(
    found: dict[str, IRResult], pairs: Sequence[tuple[str, DocumentDict]], outputs: Sequence[ReaderOutput]
) -> None:
    """``g, f = Reader(q_i, d_i)`` for every pair read."""
    for (query, _), (answer, confidence) in zip(pairs, outputs, strict=True):
        found[query]["answer"] = answer if isinstance(answer, str) else ""
        found[query]["confidence"] = usable_confidence(confidence)


def _final_content(
    state: SearChainState, task: str, sent: list[BaseMessage] | None, reply: BaseMessage | None
) -> dict[str, Any]:
    """The final content and answer; uncited or missing output is composed from *R* itself."""
    path = state.get("references") or []
    tree = state.get("tree") or []
    last: Branch | None = tree[-1] if tree else None
    chain_content = last["final_content"] if last else None

    def best_answer(content: str | None) -> str:
        # Most specific first: the traced "final answer is", the chain's own, the last answer
        # on the path, then the last answer the LLM wrote in its newest chain.
        return (
            extract_final_answer(content, task)
            or extract_final_answer(chain_content, task)
            or next((r["answer"] for r in reversed(path) if r["answer"]), "")
            or next((n["answer"] for n in reversed(last["nodes"] if last else []) if n["answer"]), "")
        )

    update: dict[str, Any] = {"feedback": None, "warnings": []}
    if reply is None or sent is None:
        content = chain_content or " ".join((last["raw"] if last else "").split())
        update["warnings"].append("no node reached the correct path; the final content is the LLM's own, uncited")
    else:
        update["usage"] = call_usage(sent, reply)
        raw = message_text(reply)
        content = parse_chain(raw).final_content or " ".join(raw.split())
        content, bad = drop_invalid_citations(content, len(path))
        if bad:
            update["warnings"].append(f"tracing cited passages that do not exist: {sorted(set(bad))}; removed")
        if not citations(content):
            content = compose_from_path(path, best_answer(content))
            update["warnings"].append(
                "the tracing output cited no passage; the final content was composed from the path"
            )
    return {**update, "final_content": content, "answer": best_answer(content) or content}


def compose_from_path(path: Sequence[Reference], answer: str) -> str:
    """Final content written from *R* itself: one cited sentence per step, then the answer."""
    steps = []
    for ref in path:
        said = ref["answer"].strip().rstrip(".") or "not found in the passage"
        steps.append(f"{ref['query'].rstrip(' ?')}: {said} [{ref['index']}].")
    return " ".join(steps) + (f" So the final answer is {answer.strip().rstrip('.')}." if answer else "")
