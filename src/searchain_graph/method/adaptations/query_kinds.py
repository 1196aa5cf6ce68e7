"""The guard of ``DuplicateQuery`` by meaning: when two queries may be one query at all.

A bi-encoder over the whole query weighs least the words that make two queries different questions:
the question word ("Where" / "When"), a number, one name for another, a relation of a name ("X's
predecessor" / "X"), the verb of a part in a work ("wrote" / "illustrated"), a beginning against an
end, a qualifier ("the original name" / "the name"). :func:`comparable` reads those words, and
:class:`~searchain_graph.method.adaptations.same_meaning.SemanticDuplicate` lets only comparable pairs reach
the cosine. Each rule came from a false duplicate in the evaluation's trees
(``docs/results/duplicate_threshold.md``, which measures what each costs in paraphrases of the
dev pairs).
"""

from __future__ import annotations

import re

__all__ = ["ANY_KIND", "answer_kind", "comparable", "names_in", "open_heads", "relations", "roles", "same_kind"]

ANY_KIND = "any"
"""The kind of a query whose question word does not say what it asks for ("What team ...")."""

_KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (kind, re.compile(pattern))
    for kind, pattern in (
        (
            "time",
            r"^(in |on |during |from |since |until )?(when|what (year|date|day|month|time|century|decade|era)"
            r"|which (year|date|day|month|century|decade))\b",
        ),
        (
            "place",
            r"^(in |at |from |to |near )?(where|what (city|country|state|town|place|location|county|region"
            r"|province|continent|venue|stadium)|which (city|country|state|town|place|location|county|region|province"
            r"|continent|venue|stadium))\b",
        ),
        ("person", r"^(who|whom|whose|which (person|actor|actress|singer|author|writer|director|player|artist))\b"),
        ("quantity", r"^(how (many|much|long|old|tall|far|big|large|high|wide|deep)|what (number|percentage|age))\b"),
        ("reason", r"^(why|how)\b"),
        ("definition", r"^what (is|are|was|were) (?!.*\bof\b)(?!.*'s\b)[^ ]+( [^ ]+){0,2}\??$"),
        ("yes_no", r"^(is|are|was|were|do|does|did|can|could|has|have|had|will|would|should)\b"),
    )
)


_PREPOSITIONS = frozenset("of in on at for from to by with about into during after before since as than".split())
_AUXILIARIES = frozenset(
    "is are was were be been being do does did has have had can could will would shall should may might must".split()
)
_STOP_HEAD = (
    _PREPOSITIONS | _AUXILIARIES | frozenset("that who whom whose which what where when why how and or".split())
)
_GENERIC_HEADS = frozenset("name names thing things one ones kind type sort".split())
"""Heads that say nothing of the answer: "What is the name of the actress ..." reads on to "actress"."""
_HEAD_KINDS: dict[str, frozenset[str]] = {
    "person": frozenset(
        "person people man woman actor actress singer author writer director player artist spouse wife husband "
        "father mother son daughter child children parent parents brother sister sibling founder producer composer "
        "performer creator owner leader president king queen predecessor successor coach member musician poet "
        "painter designer architect inventor illustrator character".split()
    ),
    "place": frozenset(
        "city country state town place location county region province continent venue stadium birthplace "
        "headquarters capital village island district".split()
    ),
    "time": frozenset("year date day month time century decade era".split()),
    "quantity": frozenset("number percentage age population amount count".split()),
}


def _singular(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def open_heads(query: str) -> tuple[str, ...]:
    """The words that may be the head noun of an open "What/Which X ...?" query, in order.

    The words between the question word (and a copula, "What is the X ...?") and the first
    auxiliary, preposition or relative word, lower case, singular, at most three: "What opera did
    ...?" -> ``("opera",)``; "Which album came out from ...?" -> ``("album", "came", "out")`` (no
    parser tells the verb here; the head is among them); "What is the name of the actress who
    ...?" -> ``("actress",)`` (a generic head reads on past "of"); "What is John's role?" ->
    ``("role",)``. Empty when the query is not open or names no head ("What did X do?").
    """
    text = " ".join(re.sub(r"[^\w\s'-]", " ", query.lower()).split())
    match = re.match(r"^(?:(?:in|at|on|for|from|to|of|with|by) )?(?:what|which) (.*)$", text)
    if not match:
        return ()
    words = match.group(1).split()
    if words and words[0] in ("is", "are", "was", "were"):
        words = words[1:]  # "What is the X of Y?": the head is X's
    words = [w for w in words if w not in ("the", "a", "an")]
    names = names_in(query)
    head: list[str] = []
    for i, word in enumerate(words):
        if word in _STOP_HEAD:
            if word == "of" and head and head[-1] in _GENERIC_HEADS:
                head = []  # "the name of the actress": read on
                continue
            break
        head.append(re.sub(r"'s$", "", word))
        if word.endswith("'s") and i + 1 < len(words) and words[i + 1] not in _STOP_HEAD and set(head) <= names:
            head = []  # "John Lynch-Staunton's role": the head follows a name's possessive
    return tuple(dict.fromkeys(_singular(w) for w in head[:3] if w not in _GENERIC_HEADS))


def answer_kind(query: str) -> str:
    """The kind of answer ``query`` asks for, from its question word (and an open query's head noun).

    One of ``time``, ``place``, ``person``, ``quantity``, ``reason``, ``definition`` (a short "What
    is X?", or "What is the X?" with nothing after X), ``yes_no``; for an open "What/Which X ...?"
    whose head noun names one of those kinds, that kind ("What is the spouse of X?": ``person``),
    else ``"thing:"`` and its candidate heads (:func:`open_heads`; "What opera did ...?":
    ``thing:opera``); else :data:`ANY_KIND`.
    """
    text = " ".join(re.sub(r"[^\w\s?'-]", " ", query.lower()).split())
    for kind, pattern in _KINDS:
        if pattern.search(text):
            return kind
    if re.match(r"^what (is|are|was|were) ([\w'-]+ ){0,6}[\w'-]+\??$", text) and not re.search(
        r"\b(of|in|on|at|for|from|by|with|did|does|do)\b|'s\b", text.split(" ", 2)[-1]
    ):
        return "definition"  # "What is the Roud Folk Song Index?"
    heads = open_heads(query)
    if not heads:
        return ANY_KIND
    for word in heads:
        for kind, nouns in _HEAD_KINDS.items():
            if word in nouns:
                return kind
    return f"thing:{'|'.join(heads)}"


def same_kind(a: str, b: str) -> bool:
    """Whether two queries can ask the same thing: the same kind of answer, or one of them open.

    A definition ("What is X?") and a yes/no question are never open: they match only their own
    kind. An open query with a head noun ("What opera ...?", ``thing:opera``) matches only a query
    that may have the same head, or one with no head at all.
    """
    ka, kb = answer_kind(a), answer_kind(b)
    if ka == kb:
        return True
    closed = {"definition", "yes_no"}
    if ka.startswith("thing:") and kb.startswith("thing:"):
        return bool(set(open_heads(a)) & set(open_heads(b)))
    if ka.startswith("thing:") or kb.startswith("thing:"):
        return ANY_KIND in (ka, kb)
    return (ka == ANY_KIND and kb not in closed) or (kb == ANY_KIND and ka not in closed)


_RELATION = re.compile(r"\b[A-Z][\w-]*['’]s\s+([a-z][\w-]*)|\bthe\s+([a-z][\w-]*)\s+of\s+(?:the\s+)?[A-Z]")


_NAME_PARTICLES = frozenset("of de da di del du la le van von der den y".split())
"""Lower-case words inside a name ("Bernard of Niemodlin", "Ludwig van Beethoven")."""


def _identity(query: str) -> bool:
    """Whether ``query`` asks only who or what its names are ("Who was Robert Suettinger?").

    A name's particles count as the name ("Who is Nicholas II of Niemodlin?"); a relation word
    does not ("Who is the king of France?").
    """
    words = set(re.sub(r"['’]s\b", "", re.sub(r"[^\w\s'’-]", " ", query.lower())).split())
    return not words - names_in(query) - _NAME_PARTICLES - {"who", "what", "is", "was", "are", "were", "the", "a", "an"}


def relations(query: str) -> set[str]:
    """What a query asks *of* a name: "X's predecessor", "the predecessor of X" -> ``{"predecessor"}``."""
    found = {(m.group(1) or m.group(2)).lower() for m in _RELATION.finditer(query)}
    return {_singular(w) for w in found} - _GENERIC_HEADS


def _asked(query: str, relation: str) -> bool:
    """Whether ``relation`` is what ``query`` asks for ("Who is X's spouse?"), not whom it asks about.

    In "Where did X's husband die?" the husband is the one asked about: a place is asked, and a
    husband is a person. A relation of no known kind ("X's role", "X's youngest daughter") is taken
    to be asked.
    """
    kinds = [k for k, nouns in _HEAD_KINDS.items() if relation in nouns]
    return not kinds or relation in open_heads(query) or answer_kind(query) in kinds


_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


_NAME = re.compile(r"(?<!^)(?<![.?!] )\b[A-Z][\w'-]*")


_NOT_NAMES = frozenset(
    "a an and as at by during for from in into of on or the to with what which who whom whose when where why how "
    "is are was were do does did".split()
)


def names_in(query: str) -> set[str]:
    """The capitalised words of ``query`` after its first word (no possessive "'s"): the names it asks about."""
    found = (re.sub(r"['’]s$", "", m.group(0)).lower() for m in _NAME.finditer(query.strip()))
    return {word for word in found if word not in _NOT_NAMES}


_PERFORMS = re.compile(
    r"\b(?:(?:play|plays|played|playing)\b(?!\s+(?:for|at|with|on|against)\b)"
    r"|(?:portray|portrays|portrayed|voice|voices|voiced|star|stars|starred|starring|actor|actress|cast)\b)",
    re.IGNORECASE,
)
"""A word that asks who performs a part ("Who plays Jennifer Parker?"), not a team's play ("play for")."""

_ROLES = {
    role: frozenset(words.split())
    for role, words in {
        "write": "write writes wrote written writer author authored",
        "illustrate": "illustrate illustrates illustrated illustrator",
        "direct": "direct directs directed director",
        "produce": "produce produces produced producer",
        "compose": "compose composes composed composer",
        "sing": "sing sings sang sung singer",
    }.items()
}
"""The parts a query may ask someone to have had in a work; "who wrote" is not "who illustrated"."""

_OPPOSITES = (
    frozenset("start starts started begin begins began begun founded born open opened established".split()),
    frozenset("end ends ended die dies died death dissolve dissolved close closed abolished".split()),
)
"""A beginning and an end: "When did the war end?" is not "When did the war start?"."""


_QUALIFIERS = frozenset(
    "original former current present previous later last next birth maiden real full "
    "first second third fourth fifth".split()
)
"""Words that say which of a thing's names, holders or parts is asked: "the original name" is not
"the name", "the second book" not "the first book"."""


def _words(query: str) -> list[str]:
    """The lower-case words of ``query`` in order, punctuation read as a space ("co-wrote": "co", "wrote")."""
    return re.sub(r"[^\w\s]", " ", query.lower()).split()


def _word_set(query: str) -> set[str]:
    """The words of ``query`` (:func:`_words`) as a set."""
    return set(_words(query))


def _qualified(a: str, b: str) -> bool:
    """One query qualifies a word both ask of ("the *original* name" / "the name") and the other not.

    Only a qualifier before a word of the other query counts: "the runner-up" / "the second place"
    and "How long did the war last?" stay paraphrases.
    """
    for x, y in ((a, b), (b, a)):
        words, other = _words(x), _word_set(y)
        if any(w in _QUALIFIERS and w not in other and nxt in other for w, nxt in zip(words, words[1:], strict=False)):
            return True
    return False


def roles(query: str) -> frozenset[str]:
    """The parts in a work that ``query`` asks about: ``perform`` (plays, portrays, voices), those of :data:`_ROLES`."""
    found = {role for role, verbs in _ROLES.items() if _word_set(query) & verbs}
    return frozenset(found | ({"perform"} if _PERFORMS.search(query) else set()))


def _opposed(a: str, b: str) -> bool:
    """One query asks of a beginning and the other of an end, and neither of both."""
    wa, wb = _word_set(a), _word_set(b)
    start, end = _OPPOSITES
    return any(x & start and y & end and not x & end and not y & start for x, y in ((wa, wb), (wb, wa)))


def comparable(a: str, b: str) -> bool:
    """Whether two queries may be one query.

    They ask for the same kind of answer (:func:`same_kind`), name the same numbers, do not ask two
    different relations of a name, nor one relation and the name itself (:func:`relations`: "Who
    was X's predecessor?" is not "Who was X?", nor "Who was X's successor?"), nor ask of a relation
    of a name what the other asks of the name ("Where did X's husband die?" is not "Where did X
    die?"; "Who is X's spouse?" still may be "Who did X marry?"), and the names of one
    are all names of the other (a paraphrase may drop a name, "Who played Corliss Archer?",
    but not swap one: "... of Ireland?" is not "... of India?"). Nor do they ask of a beginning and
    an end ("When did the war start?" / "... end?"), nor one qualifies what the other asks ("the
    original name" / "the name": :data:`_QUALIFIERS`), of two parts in a work ("Who wrote the manga?" /
    "Who illustrated ...?"), or one of who performs a part and the other not ("Who plays Jennifer
    Parker?" / "Who is Jennifer Parker?"): the verbs a bi-encoder over the whole query weighs least.
    """
    if not same_kind(a, b) or sorted(_NUMBER.findall(a)) != sorted(_NUMBER.findall(b)) or _opposed(a, b):
        return False
    if _qualified(a, b):
        return False  # "What was the original name of X?" is not "What was the name of X?"
    pa, pb = roles(a), roles(b)
    if pa != pb and ((pa and pb) or "perform" in pa ^ pb):
        return False  # "Who plays Jennifer Parker?" is not "Who is Jennifer Parker?", nor "wrote" "illustrated"
    ra, rb = relations(a), relations(b)
    if (ra and rb and not ra & rb) or (ra and not rb and _identity(b)) or (rb and not ra and _identity(a)):
        return False
    if (ra and not rb and not all(_asked(a, r) for r in ra)) or (rb and not ra and not all(_asked(b, r) for r in rb)):
        return False  # "Where did X's husband die?" asks of someone else than "Where did X die?"
    na, nb = names_in(a), names_in(b)
    return na <= nb or nb <= na
