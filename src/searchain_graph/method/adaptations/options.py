"""Questions that name their two possible answers, and a final answer that names neither.

"Which film has the director who died later, What Will You Do When You Catch Me? or School On
Fire?" is answered by one of the two films. The 1.5B's chains for such 2WikiMultihopQA questions
sometimes end on the person they compared ("... So the final answer is Ringo Lam."), which is no
answer to the question. The Chain-of-Query says which option that person belongs to: the pair
"Who directed School On Fire?" / "Ringo Lam". :func:`answer_as_option` takes that option, with a
warning; when the pairs link the answer to neither option or to both, the answer is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from searchain_graph.method.parsing import answer_contains

__all__ = ["answer_as_option", "question_options"]

_OR = re.compile(r"\s+or\s+")


def question_options(question: str) -> tuple[str, str] | None:
    """The two answers a question offers after a comma ("Which film ..., A or B?"), or None.

    The first option runs from the question's first comma to the first " or " after it, the
    second from there to the question mark: both may hold commas ("..., The Adventures Of
    Priscilla, Queen Of The Desert or Harvest: 3,000 Years?" gives the two titles), but a first
    option with " or " in it is cut there, and a question with a comma before its options
    ("In 2001, who ..., A or B?") gives a first option that starts too early (it then rarely
    matches a query of the chain, and the answer is left alone).
    """
    _, comma, rest = question.partition(",")
    rest = rest.strip()
    if not comma or not rest.endswith("?"):
        return None
    parts = _OR.split(rest[:-1].strip(), maxsplit=1)  # one pass: no backtracking on long text
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        return None
    return parts[0].strip(), parts[1].strip()


def answer_as_option(question: str, answer: str, pairs: Iterable[tuple[str, str]]) -> tuple[str, str | None]:
    """``answer``, or the option of ``question`` that the chain's ``pairs`` (query, answer) link it to.

    An answer that names an option (or is named by one) is kept. Otherwise the option is taken
    when exactly one option has a pair whose query names that option and whose answer names
    ``answer``.

    Returns:
        The answer to keep and, when it was replaced, the warning that says so.
    """
    options = question_options(question)
    if options is None or not answer.strip():
        return answer, None
    if any(answer_contains(answer, option) or answer_contains(option, answer) for option in options):
        return answer, None
    pairs = list(pairs)
    linked = [o for o in options if any(answer_contains(q, o) and answer_contains(a, answer) for q, a in pairs)]
    if len(linked) != 1:
        return answer, None
    warning = (
        f"the answer {answer!r} named neither of the question's options ({options[0]!r}, {options[1]!r}); "
        f"the chain gives it for {linked[0]!r}, which was taken"
    )
    return linked[0], warning
