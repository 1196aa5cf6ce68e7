"""Parsing of Chain-of-Query text, answer normalisation and answer extraction.

The parser accepts what LLMs actually write, not only the paper's clean format:
missing or repeated node numbers, extra whitespace, markdown bullets and bold
tags, several tags on one line, unclosed chains, the prompt's own instruction
lines echoed back ("If you don't know the answer:"), and text before or after
the chain. It never raises on LLM output: anything it cannot use is reported in
:attr:`ParsedChain.warnings`.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

from searchain_graph.method.state import ChainNode

MAX_NODES = 32
"""Nodes beyond this in one chain are dropped (with a warning): a runaway generation."""

_TAG = re.compile(
    r"\[\s*(?P<tag>unsolved\s*query|query|answer|final\s*content|question)\s*(?P<num>\d+)?\s*\]\s*[:：]?",
    re.IGNORECASE,
)
# Echoes of the prompt's own scaffolding (Figures 3 and 9-12).
_SCAFFOLD = re.compile(
    r"(if you (?:don'?t|do not) know the answer\s*:?|if you know the answer\s*:?|"
    r"instruction\s*:\s*please stop your generation\.?|for ex(?:a|)mple\s*:)",
    re.IGNORECASE,
)
_BULLET = re.compile(r"^\s*(?:[-*+\u2022>#]+|\d+[.)])\s+", re.MULTILINE)
_EMPHASIS = re.compile(r"(\*\*|__|`)")
_CITATION = re.compile(r"\[(\d+)\]")
# A run of brackets, digits and spaces holding at least one citation: "[1]", "[1][2]", "[1[5]0]".
_CITATION_CLUSTER = re.compile(r"\[[\d\s\[\]]*\]")
_CITATION_SEQUENCE = re.compile(r"(?:\[\d+\]\s*)+")
MAX_CITATION_DIGITS = 9
"""A ``[n]`` whose number has more digits cannot point at a passage: it is no citation (and Python
would refuse to make an ``int`` of thousands of digits)."""
# An answer ends at a line's end or at a sentence's full stop: not the stop of an initial ("John D.
# Rockefeller") or of a title or abbreviation ("Mr. Fix-It", "St. Louis").
_ABBREVIATIONS = ("Mr", "Mrs", "Ms", "Dr", "St", "Jr", "Sr", "Mt", "Ft", "Lt", "vs")
_ANSWER_END = r"\s*(?:$|\n|(?<!\b[A-Z])" + "".join(rf"(?<!\b{a})" for a in _ABBREVIATIONS) + r"\.(?:\s|$))"
_FINAL_ANSWER = re.compile(r"(?:the\s+)?final\s+answer\s*(?:is|:)\s*:?\s*(?P<ans>.+?)" + _ANSWER_END, re.IGNORECASE)
_ANSWER_EDGES = re.compile(r"^[\s.\"'*]+|[\s.\"'*]+$")
_ANSWER_IS = re.compile(r"\banswer\s+is\s*:?\s*(?P<ans>.+?)" + _ANSWER_END, re.IGNORECASE)


@dataclass
class ParsedChain:
    """A Chain-of-Query parsed from LLM text."""

    nodes: list[ChainNode] = field(default_factory=list)
    final_content: str | None = None
    warnings: list[str] = field(default_factory=list)


def _clean(text: str) -> str:
    text = _SCAFFOLD.sub(" ", text)
    text = " ".join(text.split())
    return text.strip(" \t\"'").strip()


def _new_node(query: str, *, unsolved: bool) -> ChainNode:
    return {"index": 0, "query": query, "answer": None, "unsolved": unsolved}


def parse_chain(text: str) -> ParsedChain:
    """Parse the LLM's Chain-of-Query output.

    Rules (documented in ``docs/method.md``):

    * ``[Query i]`` starts a node; its number is ignored and nodes are renumbered 1..n.
    * ``[Unsolved Query]`` right after an unanswered ``[Query i]`` marks that node unsolved
      (its text, a rewrite of the query, replaces the query); elsewhere it starts a new
      unsolved node.
    * ``[Answer i]`` answers the open node. A node that has an answer is solved, even if
      the LLM also echoed an ``[Unsolved Query]`` line for it (the prompt's scaffolding).
    * A query left without an answer is treated as unsolved: the LLM did not know it.
    * ``[Final Content]`` ends the chain; a ``[Question]`` tag after the first node means
      the model started another example, and parsing stops there.
    * A query that repeats an earlier node's query (after normalisation) is a loop (a small model
      asking one thing under new numbers until its token budget runs out): the chain ends before
      it, with a warning.

    Args:
        text: The raw text of one LLM generation.

    Returns:
        The nodes, the final content (or ``None``) and warnings about what was skipped.
    """
    text = _EMPHASIS.sub("", _BULLET.sub("", text or ""))
    parsed = ParsedChain()
    matches = list(_TAG.finditer(text))
    if not matches:
        if text.strip():
            parsed.warnings.append("the LLM's output has no [Query]/[Answer] tags; nothing to verify")
        else:
            parsed.warnings.append("the LLM returned empty output")
        return parsed

    nodes: list[ChainNode] = []
    current: ChainNode | None = None
    for pos, match in enumerate(matches):
        end = matches[pos + 1].start() if pos + 1 < len(matches) else len(text)
        body = text[match.end() : end]
        tag = " ".join(match.group("tag").lower().split()).replace("unsolvedquery", "unsolved query")
        tag = tag.replace("finalcontent", "final content")
        content = _clean(body)
        if tag == "question":
            if nodes or current is not None:
                break  # the model began a new example: the chain is over
            continue
        if tag == "final content":
            parsed.final_content = " ".join(body.split()).strip() or None
            break
        if tag == "query":
            if not content:
                parsed.warnings.append("skipped a [Query] with no text")
                current = None
                continue
            current = _new_node(content, unsolved=False)
            nodes.append(current)
        elif tag == "unsolved query":
            if current is not None and current["answer"] is None:
                current["unsolved"] = True
                if content:
                    current["query"] = content
            elif content:
                current = _new_node(content, unsolved=True)
                nodes.append(current)
            else:
                parsed.warnings.append("skipped an [Unsolved Query] with no text")
        elif tag == "answer":
            if current is None or current["answer"] is not None:
                parsed.warnings.append(f"skipped an [Answer] with no open query: {content[:80]!r}")
                continue
            if content:
                current["answer"] = content
                current["unsolved"] = False

    asked: dict[str, int] = {}
    for i, node in enumerate(nodes):
        key = normalize_answer(node["query"])
        if key in asked:
            parsed.warnings.append(
                f"the chain asks {node['query'][:80]!r} again (node {i + 1}, first asked as node {asked[key]}): "
                f"a loop; the chain ends at node {i}"
            )
            nodes = nodes[:i]
            break
        asked[key] = i + 1
    for node in nodes:
        if node["answer"] is None and not node["unsolved"]:
            node["unsolved"] = True
            parsed.warnings.append(f"query {node['query'][:80]!r} has no answer; treated as unsolved")
    if len(nodes) > MAX_NODES:
        parsed.warnings.append(f"chain has {len(nodes)} nodes; kept the first {MAX_NODES}")
        nodes = nodes[:MAX_NODES]
    for i, node in enumerate(nodes, start=1):
        node["index"] = i
    parsed.nodes = nodes
    return parsed


def clean_answer(answer: str | None) -> str:
    """An answer without Chain-of-Query markers or echoes of the prompt; ``""`` when nothing else is left.

    An answer that holds neither comes back as it is. ``"[Unsolved Query]: "`` or ``"If you don't
    know the answer:"`` is no answer: a run whose chain had no node must not answer with a marker.
    """
    text = answer or ""
    if not holds_markers(text):
        return text.strip()
    return " ".join(_SCAFFOLD.sub(" ", _TAG.sub(" ", text)).split())


def holds_markers(text: str | None) -> bool:
    """Whether ``text`` holds a Chain-of-Query marker (``[Query 1]:``) or an echo of the prompt's scaffolding."""
    return bool(_TAG.search(text or "") or _SCAFFOLD.search(text or ""))


def without_markers(text: str) -> str:
    """``text`` with each Chain-of-Query marker defused: ``[Query 2]:`` becomes ``(Query 2)``, never a node.

    For text from outside the LLM (a passage, the reader's answer) that the method writes into a
    reply the LLM continues (``continuation="path"``): only the LLM's own markers may shape the chain.
    """

    def defuse(match: re.Match[str]) -> str:
        marker = match.group(0)
        inner = " ".join(marker.strip().strip("[]:：").replace("]", " ").split())
        return f"({inner})" + (" " if marker[-1:].isspace() else "")

    return _TAG.sub(defuse, text)


def trim_answer(text: str) -> str:
    """``text`` without the spaces, full stops, quotes and emphasis around it (``"Toronto."`` gives ``Toronto``)."""
    return _ANSWER_EDGES.sub("", text)


STOPWORDS = frozenset(
    "a an the of in on at to for by with from and or is was are were be been being it its this that these "
    "those he she they his her their who whom whose what where when which how did does do as".split()
)
"""Function words: no content of an answer."""


def normalize_answer(text: str) -> str:
    """SQuAD answer normalisation, extended to Unicode punctuation.

    Lower-cases, removes punctuation (ASCII and Unicode, so "…" goes like "..."),
    the articles *a*, *an*, *the*, and collapses whitespace.
    """
    text = unicodedata.normalize("NFKC", text).lower()
    text = "".join(" " if (ch in string.punctuation or unicodedata.category(ch).startswith("P")) else ch for ch in text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def answer_contains(answer: str | None, span: str) -> bool:
    """True when the normalised ``span`` occurs in the normalised ``answer`` (token-aligned).

    This is the paper's consistency test for short-form tasks ("whether g appears in
    a_i"). An empty ``span`` is trivially contained: there is nothing to contradict.
    """
    needle = normalize_answer(span)
    if not needle:
        return True
    hay = normalize_answer(answer or "")
    return f" {needle} " in f" {hay} "


def content_words(text: str | None) -> set[str]:
    """The normalised words of ``text`` that are not :data:`STOPWORDS`."""
    return set(normalize_answer(text or "").split()) - STOPWORDS


def mentions(text: str | None, span: str | None) -> bool:
    """Whether ``text`` states ``span``: it contains it, or at least half of its content words.

    Looser than :func:`answer_contains`, for a reader's *g* that is a long span ("Tata Consultancy
    Services in Kochi") restated in other words around it. A span with no content word is
    mentioned by any text.
    """
    if answer_contains(text, span or ""):
        return True
    wanted = content_words(span)
    if not wanted:
        return True
    have = set(normalize_answer(text or "").split())
    return 2 * len(wanted & have) >= len(wanted)


def extract_final_answer(final_content: str | None, task: str = "multihop") -> str | None:
    """Pull the short answer out of a ``[Final Content]`` text.

    Looks for "the final answer is X" (the paper's examples), then "answer is X". For
    yes/no and fact-checking tasks the answer is reduced to ``Yes``/``No`` or
    ``SUPPORTS``/``REFUTES`` when one of them is stated.

    Returns:
        The answer, or ``None`` when the text states none.
    """
    if not final_content:
        return None
    text = strip_citations(final_content)
    if task == "fact":
        found = re.findall(r"\b(SUPPORTS?|REFUTES?)\b", text, re.IGNORECASE)
        if found:
            return "SUPPORTS" if found[-1].upper().startswith("SUPPORT") else "REFUTES"
    match = None
    for pattern in (_FINAL_ANSWER, _ANSWER_IS):
        hits = list(pattern.finditer(text))
        if hits:
            match = hits[-1]
            break
    answer = trim_answer(str(match.group("ans"))) if match else None
    if task == "yesno":
        probe = answer if answer is not None else text
        found = re.findall(r"\b(yes|no)\b", probe, re.IGNORECASE)
        if found:
            return str(found[0 if answer is not None else -1]).capitalize()
    return answer or None


def _number(digits: str) -> int | None:
    """A citation's number, or ``None`` when it has more than :data:`MAX_CITATION_DIGITS` digits."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= MAX_CITATION_DIGITS else None


def citations(text: str) -> list[int]:
    """The citation numbers ``n`` of every ``[n]`` marker in ``text``, in order.

    A number of more than :data:`MAX_CITATION_DIGITS` digits is no citation and is left out.
    """
    found = (_number(n) for n in _CITATION.findall(text or ""))
    return [n for n in found if n is not None]


def strip_citations(text: str) -> str:
    """``text`` without any citation, nested ones included (``"X [1[2]]"`` -> ``"X "``)."""
    return _CITATION_CLUSTER.sub(lambda m: "" if _CITATION.search(m.group(0)) else m.group(0), text)


def drop_invalid_citations(text: str, count: int) -> tuple[str, list[int]]:
    """Remove ``[n]`` markers with ``n`` outside ``1..count``.

    Citations written inside one another (``[1[5]0]``) are removed whole: dropping an inner one
    must not make a new citation of what is left (``[10]``). Markers whose number is too long to be
    any passage's are removed too.

    Returns:
        The cleaned text and the numbers of the citations removed: the invalid ones, and any
        inside a nested cluster (a number too long to be a citation is reported as -1).
    """
    bad: list[int] = []

    def _keep(match: re.Match[str]) -> str:
        n = _number(match.group(1))
        if n is not None and 1 <= n <= count:
            return match.group(0)
        bad.append(-1 if n is None else n)
        return ""

    def _cluster(match: re.Match[str]) -> str:
        cluster = match.group(0)
        if not _CITATION.search(cluster):
            return cluster  # "[ 1 ]", "[]": no citation in it
        if _CITATION_SEQUENCE.fullmatch(cluster):
            return _CITATION.sub(_keep, cluster)
        bad.extend(-1 if (n := _number(d)) is None else n for d in _CITATION.findall(cluster))
        return " "

    cleaned = _CITATION_CLUSTER.sub(_cluster, text)
    cleaned = re.sub(r"\s+([.,;])", r"\1", cleaned)
    return " ".join(cleaned.split()), bad


def word_count(texts: str | Sequence[str]) -> int:
    """Whitespace-delimited words, the unit of the paper's Table 5."""
    if isinstance(texts, str):
        return len(texts.split())
    return sum(len(t.split()) for t in texts)
