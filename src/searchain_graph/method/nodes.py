"""The four steps of a SearChain round (Algorithm 1); :mod:`~searchain_graph.method.graph` wires them.

Each step is a generator over ``(state, settings)``: it yields its LLM, retriever and reader
requests in the order Algorithm 1 makes them (``graph.py``'s table says what each request
returns) and returns what it adds to the state (the reducers of :mod:`~searchain_graph.method.state`
keep the rest). ``settings`` is the run's resolved :class:`~searchain_graph.method.context.Context`.

* :meth:`SearChainSteps.coq_generation` is ``ChainGenerate(Q, F)`` (Section 3.2): the LLM writes
  a whole Chain-of-Query; after feedback it continues the conversation, so the new chain is a new
  branch of the Tree-of-Reasoning *T* rooted at the node IR fed back (``T.AddChild(CoQ)``).
  With ``continuation="path"`` a later round's reply is begun with the verified pairs
  (:func:`verified_pairs`) as an assistant message, and the LLM continues it (:func:`continued`).
* :meth:`SearChainSteps.ir_check` is ``Traverse(CoQ)`` with ``IR(q_i, a_i)`` (Section 3.3): the
  top-1 passage is retrieved for every query not yet in *M*, the reader extracts *g* and *f* for
  all of them in one batch, and the nodes are judged in order (:func:`~.verdict.ir_verdict`). Each
  judged node joins *M* and *R*; the first that needs feedback ends the traversal and is recorded
  as ``feedback``, which the graph's router reads. Every node's decision is recorded on the
  branch, duplicates and the nodes not reached included.
* :meth:`SearChainSteps.feedback` renders ``PromptForVerify``/``PromptForComplete`` (Section 3.3).
* :meth:`SearChainSteps.tracing` is ``Tracing(T, R)``: a last generation writes the final content
  with ``[n]`` citations of *R*'s passages (:mod:`~searchain_graph.method.final_content`).

Where a step calls an adaptation (:mod:`searchain_graph.method.adaptations`), its ``Context``
field says whether it runs: ``demonstrations`` and ``duplicates`` choose the layout and the
``DuplicateQuery`` rule, ``chain_repair`` mends a parsed chain. With ``review=True`` the IR check
stops at each correction, for a person to decide it in the graph's ``review`` node
(:mod:`~searchain_graph.method.review`), and runs again from its stored results after the
decision; every verdict goes to the custom stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import RunnableLambda

from searchain_graph.ir.readers.base import ReaderOutput, usable_confidence
from searchain_graph.method.adaptations.chain_repair import settle_nodes
from searchain_graph.method.adaptations.closing import FINAL_MARKER, builds_on, closes_chain, supported_answer
from searchain_graph.method.adaptations.tracing_checks import compose_from_path
from searchain_graph.method.adaptations.tracing_passages import (
    READER_TASKS,
    passages_tracing_turns,
    reader_prompt,
    reader_reply,
)
from searchain_graph.method.adaptations.turns import coq_turns, tracing_turns, turn_dicts
from searchain_graph.method.calls import to_messages, trace_config
from searchain_graph.method.context import Context, required
from searchain_graph.method.final_content import final_content
from searchain_graph.method.parsing import parse_chain, without_markers
from searchain_graph.method.prompts import (
    COMPLETION_PROMPT,
    CORRECTION_PROMPT,
    DEMONSTRATION_NAMES,
    TRACING_PAIR,
)
from searchain_graph.method.question import task_question
from searchain_graph.method.review import ReviewDecision, emit_verdict, review_id, review_payload
from searchain_graph.method.state import (
    Branch,
    ChainNode,
    Check,
    DocumentDict,
    Feedback,
    Reference,
    SearChainState,
    empty_usage,
)
from searchain_graph.method.steps import Generate, Read, Retrieve, StepBody
from searchain_graph.method.verdict import (
    IRResult,
    QueryMatcher,
    check_record,
    duplicate_rule,
    feedback_for,
    ir_verdict,
    path_entry,
)

FRESH_RUN: dict[str, Any] = {
    "messages": [],
    "tree": [],
    "warnings": [],
    "references": [],
    "processed": [],
    "usage": empty_usage(),
    "ir_cache": {},
    "chain": [],
    "feedback": None,
    "review_pending": None,
    "reviews": {},
    "answer": "",
    "final_content": "",
}
"""What a new run starts with (the driver also validates the question and starts the rounds)."""


class SearChainSteps:
    """Algorithm 1's steps, with the ``DuplicateQuery`` test they use.

    Args:
        is_duplicate: ``DuplicateQuery(q_i, M)``; ``None``: the run's ``Context.duplicates`` rule
            (:func:`~searchain_graph.method.verdict.duplicate_rule`).
        review: Stop at each correction until a person accepts, rejects or edits it: the IR check
            writes it as ``review_pending`` (:func:`review_payload`) and, once the decision is in
            ``reviews``, applies it; the graph needs a checkpointer and a ``review`` node.
    """

    def __init__(self, is_duplicate: QueryMatcher | None = None, *, review: bool = False) -> None:
        self.is_duplicate = is_duplicate
        self.review = review
        # One run per verdict in a trace.
        self.judge: RunnableLambda[dict[str, Any], dict[str, Any]] = RunnableLambda(
            lambda item: ir_verdict(**item), name="ir_check_node"
        )

    # -- ChainGenerate(Q, F) ----------------------------------------------------------------------
    def coq_generation(self, state: SearChainState, settings: Context) -> StepBody:
        """Round 1: the CoQ prompt for the question; later rounds: the conversation after feedback."""
        rnd = state["rounds"]
        if rnd == 1:
            asked = task_question(state["question"], settings.task)
            opening = turn_dicts(coq_turns(settings.task, asked, required(settings.demonstrations, "demonstrations")))
            sent: list[BaseMessage] = to_messages(opening)
        else:
            opening = []
            sent = to_messages(state.get("messages") or [])
        begun = verified_pairs(state.get("references") or []) if rnd > 1 and settings.continuation == "path" else ""
        if begun:
            sent.append(AIMessage(content=begun))
        stops = [FINAL_MARKER] if settings.stop_at_final and reads_final_answer(settings) else None
        raw = yield Generate.prompt(sent, stop=stops)
        text = continued(begun, raw)
        parsed = parse_chain(text)
        warnings = [f"round {rnd}: {w}" for w in parsed.warnings]
        nodes = parsed
        if settings.chain_repair:
            nodes = settle_nodes(
                parsed.nodes,
                state["question"],
                truncated=raw.truncated and not parsed.final_content,
                names=DEMONSTRATION_NAMES.get(settings.task, ()),
            )
            warnings += [f"round {rnd}: {w}" for w in nodes.warnings]
        fb = state.get("feedback") if rnd > 1 else None
        branch: Branch = {
            "round": rnd,
            "parent": {"round": rnd - 1, "node": fb["node"], "query": fb["query"], "kind": fb["kind"]} if fb else None,
            "nodes": nodes.nodes,
            "final_content": parsed.final_content,
            "raw": text,
            "checks": [],
        }
        if begun:
            branch["begun"] = begun
        said = {"role": "assistant", "content": text}
        messages = [*opening, said]
        return {"messages": messages, "tree": [branch], "chain": nodes.nodes, "warnings": warnings}

    # -- Traverse(CoQ), IR(q_i, a_i) --------------------------------------------------------------
    def ir_check(self, state: SearChainState, settings: Context) -> StepBody:
        """Retrieve and read every new query of the chain, then judge its nodes in order."""
        chain = state.get("chain") or []
        duplicates = self.duplicates(state, chain, self.is_duplicate or duplicate_rule(settings.duplicates))
        known = state.get("ir_cache") or {}
        queries = list(
            dict.fromkeys(n["query"] for n in chain if n["index"] not in duplicates and n["query"] not in known)
        )
        found: dict[str, IRResult] = {}
        if queries:
            docs = yield Retrieve(queries)
            found, pairs = _top_passages(queries, docs)
            if pairs:
                _store_reads(found, pairs, (yield Read(pairs)))
        return self._traverse(state, settings, chain, duplicates, {**known, **found}, found)

    @staticmethod
    def duplicates(
        state: SearChainState, chain: Sequence[ChainNode], is_duplicate: QueryMatcher
    ) -> dict[int, dict[str, object]]:
        """``DuplicateQuery(q_i, M)`` for each node: the earlier node each duplicate repeats.

        A node repeats a query IR processed in an earlier round (*M*), or one asked by an earlier
        node of this chain. The earlier node is the first whose query ``is_duplicate`` matches.
        """
        earlier: list[tuple[str, dict[str, object]]] = []
        for branch in state.get("tree") or []:
            for check in branch.get("checks") or []:
                if check.get("action") not in ("duplicate", "not_reached"):
                    earlier.append((str(check["query"]), {"round": branch["round"], "node": check["node"]}))
        seen = list(state.get("processed") or [])
        # *M* as the state holds it; a query of *M* without a record (none, in a graph run) still counts.
        recorded = {q for q, _ in earlier}
        earlier += [(q, {"round": None, "node": None}) for q in seen if q not in recorded]
        out: dict[int, dict[str, object]] = {}
        for node in chain:
            if is_duplicate(node["query"], seen):
                query, where = next(((q, w) for q, w in earlier if is_duplicate(node["query"], [q])), (None, {}))
                out[node["index"]] = {"round": where.get("round"), "node": where.get("node"), "query": query}
            else:
                seen.append(node["query"])
                earlier.append((node["query"], {"round": state["rounds"], "node": node["index"]}))
        return out

    def _traverse(
        self,
        state: SearChainState,
        settings: Context,
        chain: Sequence[ChainNode],
        duplicates: dict[int, dict[str, object]],
        results: dict[str, IRResult],
        found: dict[str, IRResult],
    ) -> dict[str, Any]:
        """Judge the nodes in order; each joins *M* and *R*; the first correction or completion stops.

        ``feedback`` is the node to feed back (or ``None``); the graph's router reads it.
        """
        rnd = state["rounds"]
        theta = required(settings.confidence_threshold, "confidence_threshold")
        processed: list[str] = []
        path: list[Reference] = []
        checks: list[Check] = []
        warnings: list[str] = []
        feedback: Feedback | None = None
        first_index = len(state.get("references") or []) + 1
        # Under review, this step runs again after each decision, from the stored results; the
        # verdicts of the nodes before the last one decided were streamed by an earlier pass.
        reviews = state.get("reviews") or {}
        streamed = max((int(r["node"]) for r in reviews.values() if r.get("round") == rnd), default=0)
        for node in chain:
            if node["index"] in duplicates:
                was = duplicates[node["index"]]
                where = (
                    f"round {was['round']}, node {was['node']}" if was.get("round") is not None else "an earlier round"
                )
                checks.append(
                    {
                        "node": node["index"],
                        "query": node["query"],
                        "action": "duplicate",
                        "reason": f"asked before ({where})",
                        "duplicate_of": was,
                    }
                )
                continue
            if feedback is not None:
                checks.append(
                    {
                        "node": node["index"],
                        "query": node["query"],
                        "action": "not_reached",
                        "reason": f"IR stopped at node {feedback['node']}",
                    }
                )
                continue
            result = results[node["query"]]
            verdict = self.judge.invoke(
                {"node": node, "result": result, "settings": settings, "question": state["question"]},
                config=trace_config("ir_check_node", rnd, searchain_node=node["index"]),
            )
            reviewed: ReviewDecision | None = None
            if verdict["action"] == "correction" and self.review:
                decided = reviews.get(review_id(rnd, node["index"]))
                if decided is None:  # the ``review`` node pauses on it; this step runs again after
                    return {"ir_cache": found, "review_pending": review_payload(node, result, verdict, theta, rnd)}
                reviewed = ReviewDecision.from_record(decided)
                verdict, result = reviewed.apply(verdict, result)
            action = verdict["action"]
            processed.append(node["query"])
            checks.append(check_record(node, result, verdict, theta))
            if reviewed is not None:
                checks[-1]["decided_by"] = "ir+person"
                checks[-1]["review"] = reviewed.record()
            if node["index"] >= streamed:
                emit_verdict(rnd, checks[-1])
            if action == "no_passage":
                warnings.append(f"round {rnd}: no passage retrieved for {node['query'][:80]!r}")
                if node["unsolved"]:
                    continue
            if action == "unsolved_kept":
                continue
            path.append(path_entry(first_index + len(path), node, result, action, rnd))
            if action in ("completion", "correction"):
                feedback = feedback_for(action, node, result)
                if settings.close_early and closes_chain(chain, node["index"], state["question"]):
                    warnings.append(f"round {rnd}: IR's {action} of the chain's last node closes the path")
                    feedback = None
                    break
                if (
                    settings.check_on
                    and action == "correction"
                    and not builds_on(chain, node["index"], node["answer"] or "")
                ):
                    warnings.append(f"round {rnd}: no later node builds on node {node['index']}'s answer; IR checks on")
                    feedback = None
        if feedback is not None and rnd >= settings.max_rounds:
            warnings.append(
                f"round {rnd}: stopped at max_rounds={settings.max_rounds} with a pending {feedback['kind']}"
            )
        return {
            "processed": processed,
            "references": path,
            "feedback": feedback,
            "ir_cache": found,
            "tree": [{"round": rnd, "checks": checks}],
            "warnings": warnings,
        }

    # -- PromptForVerify / PromptForComplete -------------------------------------------------------
    def feedback(self, state: SearChainState, settings: Context) -> dict[str, Any]:
        """Render the paper's correction or completion prompt and add it to the conversation."""
        fb = state.get("feedback")
        if fb is None:  # unreachable through the graph's own edges
            return {}
        template = CORRECTION_PROMPT if fb["kind"] == "correction" else COMPLETION_PROMPT
        message = template.format(
            query=fb["query"],
            answer=fb["answer"] or "given in the Reference",
            question=task_question(state["question"], settings.task),
            reference=fb["passage"],
        )
        return {"messages": [{"role": "user", "content": message}]}

    # -- Tracing(T, R) -----------------------------------------------------------------------------
    def tracing(self, state: SearChainState, settings: Context) -> StepBody:
        """Write the final content over *R*, citing each step's passage as ``[n]``."""
        path = state.get("references") or []
        reply: str | None = None
        if path:
            asked = task_question(state["question"], settings.task)
            layout = required(settings.demonstrations, "demonstrations")
            if reads_final_answer(settings):
                tree = state.get("tree") or []
                known = supported_answer(path, tree[-1] if tree else None, state["question"])
                if settings.compose_supported and known:
                    return final_content(state, settings, "[Final Content]: " + compose_from_path(path, known))
                read = yield Generate.prompt(
                    reader_prompt(asked, path, with_confirmed=settings.tracing == "reader_confirmed")
                )
                content, why = reader_reply(path, read, state["question"], checks=bool(settings.tracing_checks))
                out = final_content(state, settings, content)
                if why:
                    out["warnings"].insert(0, why)
                return out
            if settings.tracing in ("passages", "confirmed"):
                turns = passages_tracing_turns(asked, path, layout, only_confirmed=settings.tracing == "confirmed")
            else:
                turns = tracing_turns(asked, verified_pairs(path), layout)
            reply = yield Generate.prompt(to_messages(turn_dicts(turns)))
        return final_content(state, settings, reply)


def reads_final_answer(settings: Context) -> bool:
    """Whether the tracing reads the final answer from the path's passages (``"reader"``, ``"reader_confirmed"``)."""
    return settings.tracing in ("reader", "reader_confirmed") and settings.task in READER_TASKS


def verified_pairs(path: Sequence[Reference]) -> str:
    """*R* as ``[Query i]``/``[Answer i]`` pairs in path order: the tracing's pairs.

    With ``continuation="path"`` they also begin a later round's reply, the node IR just corrected
    or completed last, with IR's answer.
    """
    # An answer IR gave is a passage's words: markers in it must not become nodes of the reply.
    return "\n".join(
        TRACING_PAIR.format(index=r["index"], query=without_markers(r["query"]), answer=without_markers(r["answer"]))
        for r in path
    )


def continued(begun: str, reply: str) -> str:
    """The whole reply of a round: what the method began (``begun``, maybe empty) and the LLM's continuation.

    A continuation that opens a new node (``[Query ...``) goes on a new line; one that goes on with
    the last answer's words (a completion's answer left for the LLM) is joined to it.
    """
    if not begun:
        return str(reply)
    head = reply.lstrip(" ")
    return f"{begun}\n{head}" if head.startswith("[") else begun + reply


def _top_passages(
    queries: Sequence[str], results: Sequence[Sequence[DocumentDict]]
) -> tuple[dict[str, IRResult], list[tuple[str, DocumentDict]]]:
    """``d_i = Retrieval(q_i)``: the top-1 passage of each query, and the (query, document) pairs to read."""
    found: dict[str, IRResult] = {}
    pairs = []
    for query, docs in zip(queries, results, strict=True):
        doc = docs[0] if docs else None
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
