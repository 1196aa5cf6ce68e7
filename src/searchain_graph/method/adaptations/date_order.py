"""Questions that ask which of two comes first in time, answered from the dates on the path.

"Who is older, David Dzakhov or David Luna Sánchez?" and "Which film has the director who died
first, A or B?" name their two possible answers and ask which is earlier (or later). The chain
can find both dates, and a small model can still draw the wrong conclusion from them ("6 October
1988" and "February 27, 1975", "So the final answer is David Dzakhov"). :func:`ordered_answer`
compares the dates themselves when *R* gives exactly one for each option, counting only the dates
IR read (:func:`dated_pairs`; SearChain w/o IR reads no passage and keeps its answer): a step whose
query names the option, or names the entity a step on that option gave (its director, its
founder), and asks the date the question is about (a birth for "older" or "born first", a death
for "died first", any other date for "released earlier"). When a date is missing, two differ for
one option, or the two cannot be ordered (the same year without both months), the answer is left
alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from searchain_graph.method.adaptations.options import question_options
from searchain_graph.method.adaptations.tracing_passages import confirmed
from searchain_graph.method.parsing import answer_contains, normalize_answer
from searchain_graph.method.state import Reference

__all__ = ["DateOrder", "date_order_of", "dated_pairs", "dates_in", "ordered_answer"]

Event = Literal["birth", "death", "any"]
Date = tuple[int, int | None, int | None]
"""(year, month, day); a bare year has no month or day."""

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "|".join(sorted(_MONTHS, key=len, reverse=True))
_DATE = re.compile(
    rf"\b(?:(?P<d1>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<m1>{_MONTH})\.?,?\s+(?P<y1>\d{{3,4}})"
    rf"|(?P<m2>{_MONTH})\.?,?\s+(?P<d2>\d{{1,2}})(?:st|nd|rd|th)?,?\s+(?P<y2>\d{{3,4}})"
    rf"|(?P<m3>{_MONTH})\.?,?\s+(?P<y3>\d{{3,4}})"
    rf"|(?P<y4>\d{{4}})-(?P<m4>\d{{2}})-(?P<d4>\d{{2}})"
    rf"|(?P<y5>\d{{4}}))\b",
    re.IGNORECASE,
)

_EARLY = r"older|oldest|elder|first|earlier|earliest|sooner|before"
_LATE = r"younger|youngest|later|latest|last|more recently|most recently|recent|newer|newest|after"
_DIRECTION = re.compile(rf"\b(?P<early>{_EARLY})\b|\b(?P<late>{_LATE})\b", re.IGNORECASE)
_DEATH = re.compile(r"\b(died|die|dies|death|passed away)\b", re.IGNORECASE)
_BIRTH = re.compile(r"\b(born|birth|birthday|older|oldest|younger|youngest|elder)\b", re.IGNORECASE)
_AGE = re.compile(r"\b(older|oldest|younger|youngest|elder)\b", re.IGNORECASE)
_PERSON = re.compile(r"\b(who|person|director|composer|author)\b", re.IGNORECASE)
_ASKS_BIRTH = re.compile(r"\b(born|birth|birthday|age)\b", re.IGNORECASE)
_BORN = re.compile(r"\b(born|birth)\b", re.IGNORECASE)
_AUXILIARY = ("was", "were", "is", "are", "did", "does", "do")


@dataclass(frozen=True)
class DateOrder:
    """What a question asks to order: its two ``options``, which ``event`` and whether the ``earliest`` wins."""

    options: tuple[str, str]
    event: Event
    earliest: bool


def date_order_of(question: str) -> DateOrder | None:
    """The order a question asks for ("Who was born first, A or B?"), or None when it asks none.

    The options are the question's two answers after a comma (:func:`question_options`), or the
    two names of "Was A or B born first?". The direction is the question's one word of time
    ("older", "first", "earlier" against "younger", "later", "more recently"); a question with
    words of both directions, or with none, asks no order this can decide.
    """
    question = question.strip()
    question = question if question.endswith("?") else f"{question}?"  # "Who was born first, A or B"
    options = question_options(question)
    head = question.partition(",")[0]
    if options is None:
        alternative = _alternative(question)
        if alternative is None:
            return None
        options, head = alternative
    found = {"early" if m["early"] else "late" for m in _DIRECTION.finditer(head)}
    if len(found) != 1:
        return None
    event: Event = "death" if _DEATH.search(head) else "birth" if _BIRTH.search(head) else "any"
    if event == "birth" and _AGE.search(head) and not _PERSON.search(head):
        event = "any"  # "Which film is older": a release, not a birth
    return DateOrder(options=options, event=event, earliest="early" in found)


def _alternative(question: str) -> tuple[tuple[str, str], str] | None:
    """The options of "Was A or B born first?" and the words after them ("born first?"), or None.

    The second option ends before the question's last words in lower case (the verb and the word
    of time): a name is capitalised.
    """
    first, _, rest = question.partition(" ")
    if first.lower() not in _AUXILIARY:
        return None
    parts = rest[:-1].split(" or ")
    if len(parts) != 2:
        return None
    words = parts[1].split()
    tail = 0
    while tail < len(words) and words[-1 - tail][:1].islower():
        tail += 1
    if not tail or tail == len(words) or not parts[0].strip():
        return None
    return (parts[0].strip(), " ".join(words[:-tail])), " ".join(words[-tail:]) + "?"


def dates_in(text: str) -> list[Date]:
    """The dates ``text`` states, in order, as (year, month, day); a bare year has no month or day."""
    found = []
    for m in _DATE.finditer(text or ""):
        g = m.groupdict()
        year = next(int(g[k]) for k in ("y1", "y2", "y3", "y4", "y5") if g[k])
        month_name = next((g[k] for k in ("m1", "m2", "m3") if g[k]), None)
        month = _MONTHS[month_name.lower()] if month_name else int(g["m4"]) if g["m4"] else None
        day = next((int(g[k]) for k in ("d1", "d2", "d4") if g[k]), None)
        if month is not None and not 1 <= month <= 12:
            continue
        found.append((year, month, day))
    return found


def dated_pairs(path: Sequence[Reference]) -> list[tuple[str, str]]:
    """*R*'s steps as (query, answer) pairs whose dates are the dates IR read, never the LLM's alone.

    A step's answer is kept where IR stands behind it (:func:`~.tracing_passages.confirmed`) or
    where it states no date (a name links an option to its director). An unconfirmed date is
    replaced by the reader's *g* when that is a date (read in the step's passage, though with
    *f* ≤ θ), else dropped: "1980" for Erika Jayne's birth, where the passage says 10 July 1971,
    dates nothing.
    """
    pairs = []
    for ref in path:
        answer, g = ref["answer"], ref.get("reader_answer") or ""
        if not confirmed(ref) and dates_in(answer):
            answer = g if dates_in(g) else ""
        pairs.append((ref["query"], answer))
    return pairs


def _asks(query: str, event: Event) -> bool:
    """Whether a step's query asks a date of ``event`` (any date: one of neither birth nor death)."""
    if event == "birth":
        return bool(_ASKS_BIRTH.search(query))
    if event == "death":
        return bool(_DEATH.search(query))
    return not _DEATH.search(query) and not _BORN.search(query)


def _date_of(option: str, pairs: Sequence[tuple[str, str]], event: Event) -> Date | None:
    """The one date the ``pairs`` give for ``option``, directly or through an entity a pair gave for it."""
    names = _names(option)
    about = list(names)
    for query, answer in pairs:
        if any(answer_contains(query, n) for n in names) and answer.strip() and not dates_in(answer):
            about.append(answer)
    dates = set()
    for query, answer in pairs:
        if not _asks(query, event) or not any(a and answer_contains(query, a) for a in about):
            continue
        stated = dates_in(answer)
        if stated:
            dates.add(stated[-1] if event == "death" else stated[0])
    return dates.pop() if len(dates) == 1 else None


def _names(option: str) -> list[str]:
    """``option`` and, for a title with a parenthesis ("The Base (Film)"), the title without it."""
    bare = re.sub(r"\s*\([^)]*\)", "", option).strip()
    return [n for n in dict.fromkeys((option, bare)) if normalize_answer(n)]


def _before(a: Date, b: Date) -> bool | None:
    """Whether date ``a`` is before ``b``; None when they cannot be told apart."""
    for x, y in zip(a, b, strict=True):
        if x is None or y is None:
            return None
        if x != y:
            return x < y
    return None


def ordered_answer(question: str, answer: str, pairs: Iterable[tuple[str, str]]) -> tuple[str, str | None]:
    """``answer``, or the option the dates in the chain's ``pairs`` (query, answer) put first (or last).

    Only a question that asks an order in time (:func:`date_order_of`) is answered from the dates.

    Returns:
        The answer to keep and, when the dates replaced it, the warning that says so.
    """
    order = date_order_of(question)
    if order is None:
        return answer, None
    first, second = order.options
    pairs = list(pairs)
    a, b = _date_of(first, pairs, order.event), _date_of(second, pairs, order.event)
    if a is None or b is None:
        return answer, None
    before = _before(a, b)
    if before is None:
        return answer, None
    chosen = first if before == order.earliest else second
    if answer_contains(answer, chosen) and not answer_contains(answer, second if chosen == first else first):
        return answer, None
    return chosen, (
        f"the path dates {first!r} {_shown(a)} and {second!r} {_shown(b)}; the question asks the "
        f"{'earlier' if order.earliest else 'later'}, {chosen!r}, which replaces the answer {answer!r}"
    )


def _shown(date: Date) -> str:
    return "-".join(f"{part:02d}" if i else str(part) for i, part in enumerate(date) if part is not None)
