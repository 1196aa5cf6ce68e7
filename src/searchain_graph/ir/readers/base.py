r"""The reader interface: extract an answer *g* from a passage with a confidence *f* (Section 3.3).

A reader reads ``(query, passage)`` pairs, where the passage is a :class:`Passage`: the
retrieved document's text and its title, kept apart (:func:`passage_of` builds one from a
LangChain ``Document``, the title being ``metadata["title"]``). A reader declares that it takes
:class:`Passage` with the class attribute ``reads_passages = True`` and has
``read(query, passage) -> ReaderOutput``; when it also has ``read_batch(pairs)`` (and, for async
graphs, ``aread_batch``), SearChain reads all nodes of one round in a single call
(:func:`read_pairs`, :func:`aread_pairs`).

Readers written for the old interface, ``read(query, passage: str)`` with the passage as
``"title\ntext"`` (the text alone when there is no title), still work: a reader without
``reads_passages`` gets that string from :func:`read_pairs`, with a ``DeprecationWarning`` once
per reader class. The old string is ambiguous (a passage without a title whose text has more
than one line looks like ``"title\ntext"``), which is why the interface changed. Callers
written for it may still hand a ``str`` to :func:`read_pairs` or to a shipped reader's
``read``: one line is a text without a title, and a string with a line break is split the old
way, with a ``DeprecationWarning`` (:func:`as_passage`).

Confidences of the readers shipped here (:class:`~searchain_graph.ir.readers.llm.LLMReader`,
:class:`~searchain_graph.ir.readers.extractive.ExtractiveQAReader`) are log-odds, clipped to
``[MIN_CONFIDENCE, MAX_CONFIDENCE]`` (:func:`logprob_confidence`), so that the paper's θ = 1.5
keeps its meaning of "confident enough to overrule the LLM" (p > 0.82). The paper's DPR reader,
whose *f* is a relevance logit, is a different scale; see ``docs/method.md``.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import threading
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol, runtime_checkable

MIN_CONFIDENCE = -10.0
MAX_CONFIDENCE = 10.0


class ReaderOutput(NamedTuple):
    """What a reader extracts from one passage.

    Attributes:
        answer: The extracted answer *g* ("" when the passage holds none).
        confidence: The reader's confidence *f*; IR overrules the LLM only when ``f > θ``.
            ``None`` is no confidence: what the graph makes of a read whose *f* is not a finite
            number (NaN, ±inf, ``None``, a string), which then never corrects a node.
    """

    answer: str
    confidence: float | None


def usable_confidence(value: object) -> float | None:
    """A reader's *f* as a finite float, or ``None`` ("no confidence").

    Any real number (Python's or NumPy's) that is finite is kept; ``None``, NaN, ±inf, a bool,
    a string or anything else is no confidence, so that a broken read never corrects a node.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


class Passage(NamedTuple):
    """What a reader reads: a retrieved passage's text and its title, kept apart.

    Attributes:
        text: The passage text (a ``Document``'s ``page_content``).
        title: Its title (``metadata["title"]``), ``""`` when it has none.
    """

    text: str
    title: str = ""

    def joined(self) -> str:
        r"""Title and text as one string, ``"title\ntext"`` (the text alone when there is no title).

        What the old reader interface passed, and what the extractive QA and LLM readers read
        (they have no title segment).
        """
        title = self.title.strip()
        return f"{title}\n{self.text}" if title else self.text


PassageLike = Passage | str
"""What a shipped reader's ``read`` accepts: a :class:`Passage`, or a ``str`` (see :func:`as_passage`)."""


def as_passage(passage: PassageLike) -> Passage:
    r"""A reader's argument as a :class:`Passage`.

    A :class:`Passage` is returned as is, a ``str`` of one line is a text without a title. A
    ``str`` with a line break is taken the old interface's way, ``"title\ntext"``
    (:func:`passage_of`), so that code written for it reads as before, with a
    ``DeprecationWarning`` (once): such a string is ambiguous, and a text of several lines
    without a title should be passed as ``Passage(text)``.

    The shipped readers' ``read``/``read_batch`` and :func:`read_pairs` accept strings this way.

    Raises:
        TypeError: ``passage`` is neither.
    """
    if isinstance(passage, Passage):
        return passage
    if isinstance(passage, str):
        if "\n" not in passage:
            return Passage(passage)
        _warn_once(
            "str",
            "a passage given as a str with a line break is read the old way, as 'title\\ntext'; "
            "pass a searchain_graph.ir.readers.base.Passage (Passage(text, title), or Passage(text) for "
            "a text without a title; passage_of(document) for a retrieved Document)",
        )
        return passage_of(passage)
    raise TypeError(f"a passage must be a Passage or a str, got {type(passage).__name__}")


def passage_of(source: Any) -> Passage:
    r"""The :class:`Passage` of a retrieved document.

    Args:
        source: A LangChain ``Document`` or its plain-dict form (``{"page_content",
            "metadata"}``, as graph state keeps it): the text is ``page_content`` and the title
            ``metadata["title"]`` (stripped; ``""`` when missing). A :class:`Passage` is returned
            as is. A ``str`` is taken to be the old reader interface's ``"title\ntext"`` (the
            first line is the title when there is more than one line): use it only where that
            string is all there is, since a text of several lines without a title is then
            split wrongly; for a bare text, use ``Passage(text)``.

    Raises:
        TypeError: ``source`` is none of these.
    """
    if isinstance(source, Passage):
        return source
    if isinstance(source, str):
        first, newline, rest = source.partition("\n")
        return Passage(rest, first.strip()) if newline else Passage(source)
    if isinstance(source, Mapping):
        content, metadata = source.get("page_content"), source.get("metadata")
    else:
        content, metadata = getattr(source, "page_content", None), getattr(source, "metadata", None)
    if not isinstance(content, str):
        raise TypeError(f"cannot make a Passage of {type(source).__name__}: no page_content string")
    title = metadata.get("title") if isinstance(metadata, Mapping) else None
    return Passage(content, str(title or "").strip())


@runtime_checkable
class Reader(Protocol):
    r"""The reader interface: ``read(query, passage) -> ReaderOutput``.

    A reader that sets the class attribute ``reads_passages = True`` gets each passage as a
    :class:`Passage` (``text`` and ``title`` apart), in ``read(query, passage)`` and, when it
    has them, ``read_batch(pairs)`` and ``async aread_batch(pairs)`` over ``(query, Passage)``
    pairs. A reader without it is an old-style reader: it gets the string ``"title\ntext"``
    (the text alone when there is no title, :meth:`Passage.joined`), as before;
    :func:`read_pairs` warns (``DeprecationWarning``, once per class) that it should move to
    :class:`Passage`.

    A reader whose *g* can be "yes" or "no" may say so with the class attribute
    ``answers_yes_no = True`` (the default for readers that do not say); the shipped readers
    extract words of the passage and set it False, so that SearChain does not verify yes/no
    answers with them (:mod:`searchain_graph.method.verdict`). Every optional declaration, with
    its type and default, is a field of :class:`ReaderTraits`, read by :func:`reader_traits`.
    """

    def read(self, query: str, passage: Any) -> ReaderOutput:
        """Extract the answer to ``query`` from ``passage`` (a :class:`Passage`, or a str for old readers)."""
        ...


@dataclass(frozen=True)
class ReaderTraits:
    r"""What a reader declares besides ``read``: every optional attribute, read once and typed.

    A reader may set any of these as class (or instance) attributes; one it leaves out takes
    the default here. :func:`reader_traits` is the only place they are read.

    Attributes:
        reads_passages: ``read`` takes a :class:`Passage` (else the old ``"title\ntext"`` string).
        answers_yes_no: Its *g* can be "yes" or "no", so verification may check yes/no answers
            (False for the shipped readers, which extract words of the passage).
        default_threshold: Its own θ (the bundled reader's calibrated one), else ``None``.
        threshold_source: Where ``default_threshold`` comes from, for logs and metadata.
        calibration_key: The key of its saved calibration (``searchain calibrate``), if any.
    """

    reads_passages: bool = False
    answers_yes_no: bool = True
    default_threshold: float | None = None
    threshold_source: str | None = None
    calibration_key: str | None = None


def reader_traits(reader: object) -> ReaderTraits:
    """The optional declarations of ``reader`` (see :class:`ReaderTraits`).

    Raises:
        TypeError: a declaration has the wrong type (the message names it and the reader).
    """
    found: dict[str, Any] = {}
    for name, kinds in (
        ("reads_passages", (bool,)),
        ("answers_yes_no", (bool,)),
        ("default_threshold", (int, float)),
        ("threshold_source", (str,)),
        ("calibration_key", (str,)),
    ):
        value = getattr(reader, name, None)
        if value is None:
            continue
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise TypeError(
                f"{type(reader).__name__}.{name} must be {' or '.join(k.__name__ for k in kinds)}, got {value!r}"
            )
        found[name] = float(value) if name == "default_threshold" else value
    return ReaderTraits(**found)


def reads_passages(reader: object) -> bool:
    """Whether ``reader`` takes :class:`Passage` (it sets ``reads_passages = True``)."""
    return reader_traits(reader).reads_passages


_warned: set[object] = set()
_warned_lock = threading.Lock()


def _warn_once(key: object, message: str, stacklevel: int = 3) -> None:
    """A ``DeprecationWarning``, the first time only for ``key``."""
    with _warned_lock:
        if key in _warned:
            return
        _warned.add(key)
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel)


def _for_reader(reader: object, pairs: Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The pairs as ``reader`` takes them: :class:`Passage` for a new-style reader, else the old string."""
    if reads_passages(reader):
        return [(q, as_passage(p) if isinstance(p, str) else passage_of(p)) for q, p in pairs]
    cls = type(reader)
    _warn_once(
        cls,
        f"{cls.__qualname__} reads passages as 'title\\ntext' strings, the old reader interface; set "
        "reads_passages = True on the class and take searchain_graph.ir.readers.base.Passage (text and "
        "title apart) in read/read_batch",
        stacklevel=4,
    )
    return [(q, p if isinstance(p, str) else passage_of(p).joined()) for q, p in pairs]


def _check_outputs(outputs: Sequence[Any], expected: int, reader: object) -> list[ReaderOutput]:
    outputs = list(outputs)
    if len(outputs) != expected:
        raise ValueError(f"{type(reader).__name__}.read_batch returned {len(outputs)} results for {expected} pairs")
    result = []
    for out in outputs:
        answer, confidence = out
        result.append(ReaderOutput(answer if isinstance(answer, str) else "", usable_confidence(confidence)))
    return result


def _read(reader: Reader, pairs: list[tuple[str, Any]]) -> list[ReaderOutput]:
    batch = getattr(reader, "read_batch", None)
    if callable(batch):
        return _check_outputs(batch(pairs), len(pairs), reader)
    return _check_outputs([reader.read(q, p) for q, p in pairs], len(pairs), reader)


def read_pairs(reader: Reader, pairs: Sequence[tuple[str, Passage]]) -> list[ReaderOutput]:
    r"""Read ``(query, Passage)`` pairs, in one ``read_batch`` call when the reader has one.

    A reader with ``reads_passages = True`` gets the passages as :class:`Passage`; any other
    reader gets ``Passage.joined()`` strings (``"title\ntext"``) and a ``DeprecationWarning``
    once per class. A ``Document`` (or its dict) is also accepted as a passage
    (:func:`passage_of`), and so is a ``str`` (:func:`as_passage`: one line is a text, a string
    with a line break the old ``"title\ntext"``, deprecated); an old-style reader gets a ``str``
    unchanged.
    """
    if not pairs:
        return []
    return _read(reader, _for_reader(reader, pairs))


async def aread_pairs(reader: Reader, pairs: Sequence[tuple[str, Passage]]) -> list[ReaderOutput]:
    """Async :func:`read_pairs`: uses ``aread_batch`` when present, else a worker thread."""
    if not pairs:
        return []
    prepared = _for_reader(reader, pairs)
    abatch = getattr(reader, "aread_batch", None)
    if callable(abatch):
        return _check_outputs(await abatch(prepared), len(prepared), reader)
    return await asyncio.to_thread(_read, reader, prepared)


def logprob_confidence(logprobs: Sequence[float]) -> float:
    """Log-odds of the geometric-mean token probability, clipped to [-10, 10]."""
    if not logprobs:
        return MIN_CONFIDENCE
    mean = sum(logprobs) / len(logprobs)
    p = math.exp(min(mean, 0.0))
    if p >= 1.0:
        return MAX_CONFIDENCE
    if p <= 0.0:
        return MIN_CONFIDENCE
    return max(MIN_CONFIDENCE, min(MAX_CONFIDENCE, math.log(p / (1.0 - p))))
