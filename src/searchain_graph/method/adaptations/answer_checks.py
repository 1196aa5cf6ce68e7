"""Two checks of the reader's *g* before it overrules the LLM (``Context.answer_checks``).

Verification corrects a node when ``f > θ`` and *g* is not in the LLM's answer. On the oracle
chains of the ``../shared`` MuSiQue and 2Wiki samples, two kinds of confident reads broke correct nodes:

* **g of the wrong kind.** "What is the place of birth of Denys Desjardins?" read "1966"
  (f = 6.40), "... of Mark Steven Johnson?" read "October 30, 1964" (f = 5.06): the reader took
  the date beside the place. A date or a number is no answer to a query that asks for a place or a
  person (:func:`~searchain_graph.method.adaptations.query_kinds.answer_kind`), however sure the reader is:
  :func:`mistyped` says so, and the node passes.
* **g spelled another way.** "Puttana Kanagal" for the LLM's "Puttanna Kanagal": the same name,
  and a correction to it would only change its spelling. :func:`spelled_alike` accepts *g* when
  some words of the answer differ from it by about one letter (see its docstring), with the same
  digits.

A third check, the tuned preset's (``Context.stated_answers``; the paper's preset has none):

* **An answer the question states.** "Alice David is the voice of Lara Croft in a video game
  developed by which company?": node 1 asked "Who is the voice of Lara Croft?", the LLM answered
  from the question, and a passage on another Lara Croft game read "Keeley Hawes" (f = 6.22).
  The question is given, not retrieved: :func:`stated_in_question` says when the LLM's answer is
  the question's own words and *g* does not contain it (a *g* that does, "Summerlin, Nevada" for
  "Nevada", still corrects: it says more).

Completion is unchanged: an unsolved query always gets *g*, as in the paper.
"""

from __future__ import annotations

import difflib
import re

from searchain_graph.method.adaptations.query_kinds import answer_kind
from searchain_graph.method.limits import MAX_REPLY_CHARS
from searchain_graph.method.parsing import answer_contains, normalize_answer

__all__ = ["ALIKE_RATIO", "mistyped", "reads_as_date", "spelled_alike", "stated_in_question"]

ALIKE_RATIO = 0.94
"""The least ``difflib`` ratio at which two spellings are one: one letter added or dropped in a
name of 8 characters or more, one letter changed in one of 17 or more."""

_MONTHS = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec".split()
)
_DATE_WORDS = frozenset("c ca circa ad bc bce ce".split())
_NUMBER_WORD = re.compile(r"^\d+(?:st|nd|rd|th|s)?$")
_MAX_CHECKED = 200
"""Characters of *g* read: a longer one is no date, and only its start is compared (a reader's span
is short; this bounds the work)."""


def reads_as_date(text: str) -> bool:
    """Whether ``text`` is only a date, a year, a number or a range of them ("1966", "October 30, 1964").

    Every word is a number (with "st", "nd", "rd", "th" or a decade's "s"), a month, or one of
    "c.", "circa", "AD", "BC", "BCE", "CE"; and there is at least one digit.
    """
    if not text or len(text) > _MAX_CHECKED or not any(ch.isdigit() for ch in text):
        return False
    words = re.findall(r"\w+", text.lower())
    return bool(words) and all(w in _MONTHS or w in _DATE_WORDS or _NUMBER_WORD.match(w) for w in words)


def mistyped(query: str, g: str) -> str | None:
    """Why ``g`` cannot answer ``query`` (a date or number for a place or a person), else ``None``."""
    kind = answer_kind(query)
    if kind in ("place", "person") and reads_as_date(g):
        return f"g is a date or number; the query asks for a {kind}"
    return None


def _digits(text: str) -> list[str]:
    return re.findall(r"\d+", text)


def spelled_alike(answer: str, g: str, *, ratio: float = ALIKE_RATIO) -> bool:
    """Whether some consecutive words of ``answer`` spell ``g`` with about one letter's difference.

    Both are normalised as answers are (lower case, no punctuation or articles); the words of
    ``answer`` are compared in windows of as many words as ``g`` has (one fewer or more too) by
    ``difflib``'s ratio, at least ``ratio`` (:data:`ALIKE_RATIO`), and a window must hold the
    same numbers as ``g`` ("1599" is not "1600"). Strings of under 8 characters are never alike:
    short names differ by one letter ("John", "Joan"). Only the first ``MAX_REPLY_CHARS`` of
    ``answer`` are read (no node's answer is longer).
    """
    g_norm = normalize_answer(g[:_MAX_CHECKED])
    if len(g_norm) < 8:
        return False
    words = normalize_answer(answer[:MAX_REPLY_CHARS]).split()
    n, digits = len(g_norm.split()), _digits(g_norm)
    for size in {max(1, n - 1), n, n + 1}:
        for i in range(max(0, len(words) - size) + 1):
            window = " ".join(words[i : i + size])
            # difflib's ratio is at most 2 * shorter / (sum of lengths) (its real_quick_ratio):
            # a window too long or too short for g is skipped before any comparison.
            if 2 * min(len(window), len(g_norm)) < ratio * (len(window) + len(g_norm)):
                continue
            if _digits(window) != digits:
                continue
            matcher = difflib.SequenceMatcher(None, window, g_norm, autojunk=False)
            if matcher.quick_ratio() >= ratio and matcher.ratio() >= ratio:
                return True
    return False


def stated_in_question(question: str, answer: str, g: str) -> bool:
    """Whether the LLM's ``answer`` is words of the ``question`` that ``g`` does not contain.

    Both tests are :func:`~searchain_graph.method.parsing.answer_contains` (normalised,
    token-aligned): "Armie Hammer." is in "The Polar Bears featuring the voice of Armie Hammer, ...";
    "Nevada" is in the question and in *g* "Summerlin, Nevada", so it is not stated against *g*.
    An empty answer is never stated. Only the first ``MAX_REPLY_CHARS`` of each text are read.
    """
    answer = answer[:MAX_REPLY_CHARS]
    if not normalize_answer(answer):
        return False
    return answer_contains(question[:MAX_REPLY_CHARS], answer) and not answer_contains(g[:MAX_REPLY_CHARS], answer)
