"""Chain repair: the parsed Chain-of-Query mended before IR checks it (``Context.chain_repair``).

The paper checks every node the LLM wrote. A small model's chain holds nodes that answer nothing:

* a reply cut by the token budget ends in a half-written node ("What was Cor");
* an answer that says it is unknown ("Unknown.", "I don't know", "Not provided") is an unsolved
  query written as an answer;
* an answer that names an entity of the prompt's worked example for a question that does not
  ("Toronto Coach Terminal" for a bus station in Ohio) copied the demonstration;
* a reply with no node at all leaves IR nothing to check.

:func:`settle_nodes` drops the first, marks the next two unsolved (so that IR completes them) and
gives the last the question itself as its one unsolved node. :func:`copied_names` is also the
tracing check's test (:mod:`~searchain_graph.method.adaptations.tracing_checks`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from searchain_graph.method.parsing import ParsedChain, answer_contains, content_words
from searchain_graph.method.state import ChainNode

__all__ = ["copied_names", "says_unknown", "settle_nodes"]

_NO_KNOWLEDGE = frozenset(
    "unknown not known know don t do i no information idea answer cannot can sure unsure unclear available "
    "provided specified mentioned found given n sorry m ve".split()
)
_NUMERAL_I = re.compile(r"[A-Za-z0-9]\s+I\b(?!['’])")
"""An "I" after a word: a Roman numeral ("Division I."), where the pronoun starts its clause."""
_GENERIC = frozenset("actress actor person people man woman name named called someone character role".split())
"""Words that name no one: "the actress is unknown" says no more than "unknown"."""


def says_unknown(answer: str | None) -> bool:
    """Whether ``answer`` answers nothing because it says that the answer is unknown.

    True when, after normalisation and without function words, the answer has a word of a "not
    known" phrasing and every other word names no one (``"Unknown."``, ``"I don't know"``, ``"Not
    provided"``, ``"The actress is unknown"``), or no word is left. A yes/no answer is an answer,
    and so is a word that names no one on its own ("Actor." for a profession). An answer made of
    the query's own words is an answer too: a query often names its answer among others ("Who
    performed ... by Dillon Francis and DJ Snake?" → "DJ Snake"), and words alone cannot tell that
    from a restatement.
    """
    if not answer or re.match(r"^\W*(yes|no)\b", answer, re.IGNORECASE):
        return False
    said = content_words(answer)
    # "I" right after a word is the numeral ("Division I", "World War I"), not the pronoun of
    # "I don't know": then it is a word of the answer.
    unknown = _NO_KNOWLEDGE - {"i"} if _NUMERAL_I.search(answer) else _NO_KNOWLEDGE
    return not said or (said <= unknown | _GENERIC and bool(said & unknown))


def copied_names(text: str | None, question: str, names: Sequence[str]) -> list[str]:
    """The ``names`` (a demonstration's entities) that ``text`` says, for a question not about them.

    A question that names any of ``names`` is about the demonstration's subjects, and nothing is
    copied. Matching is token-aligned on normalised text (:func:`answer_contains`): "Toronto Coach
    Terminal" answering a question about buses in Columbus copies the demonstration; answering one
    about buses in Toronto, it does not.
    """
    if not text or any(answer_contains(question, n) for n in names):
        return []
    return [n for n in names if answer_contains(text, n)]


def settle_nodes(nodes: list[ChainNode], question: str, *, truncated: bool, names: Sequence[str] = ()) -> ParsedChain:
    """The nodes IR checks, from the parsed chain, with a warning for each change.

    * A reply cut by the token budget (``truncated``, with no final content) may end in a
      half-written node ("What was Cor"): its last node is dropped, never checked or sent back.
    * A node whose answer says it is unknown (:func:`says_unknown`) answers nothing: it is marked
      unsolved, so that IR completes it.
    * A node whose answer names an entity of the prompt's demonstrations (``names``) that neither
      the question nor the node's query names copied the worked example ("Toronto Coach
      Terminal" for a bus station in Ohio): it is marked unsolved, so that IR completes it.
    * A chain with no node left has the question itself as its one unsolved node, so that IR
      completes the question rather than the run answering with nothing (or a marker).
    """
    out = ParsedChain(nodes=[dict(n) for n in nodes])  # type: ignore[misc]
    if truncated and out.nodes:
        last = out.nodes.pop()
        out.warnings.append(f"the reply was cut by the token budget; its last node {last['query'][:80]!r} was dropped")
    for node in out.nodes:
        if not node["unsolved"] and says_unknown(node["answer"]):
            node["unsolved"] = True
            out.warnings.append(
                f"node {node['index']}'s answer {str(node['answer'])[:80]!r} says it is unknown; treated as unsolved"
            )
        elif not node["unsolved"] and (copied := copied_names(node["answer"], f"{question} {node['query']}", names)):
            node["unsolved"] = True
            out.warnings.append(
                f"node {node['index']}'s answer {str(node['answer'])[:80]!r} names the worked example's "
                f"{', '.join(copied)}, which the question does not; treated as unsolved"
            )
    if not out.nodes:
        out.nodes = [{"index": 1, "query": question, "answer": None, "unsolved": True}]
        out.warnings.append("the chain has no node to check; the question itself is completed by IR")
    return out
