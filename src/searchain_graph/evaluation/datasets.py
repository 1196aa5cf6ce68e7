"""Evaluation datasets in their native formats, read into one :class:`Example` layout.

Each loader reads the file as its authors distribute it, so code written against the
development samples also works on the full downloads:

==================  ==============================================================  =========
dataset             native format (one question per line, or a JSON array)          task
==================  ==============================================================  =========
``hotpotqa``        raw (``hotpot_dev_distractor_v1.json``: ``_id``, ``question``,   multihop
                    ``answer``, ``type``, ``level``, ``context``, ``supporting_facts``)
                    or IRCoT's processed JSONL (``question_id``, ``question_text``,
                    ``answers_objects[].spans``, ``contexts[]``)
``musique``         MuSiQue JSONL (``id``, ``question``, ``answer``,                 multihop
                    ``answer_aliases``, ``paragraphs``, ``question_decomposition``);
                    IRCoT's processed layout is accepted too
``2wikimultihopqa`` raw (``_id``, ``question``, ``answer``, ``type``, ``context``,      multihop
                    ``supporting_facts``, ``evidences``); IRCoT's layout too
``strategyqa``      official (``qid``, ``question``, ``answer`` bool, ``facts``,      yesno
                    ``decomposition``, ``evidence``)
``fever``           FEVER JSONL (``id``, ``claim``, ``label``, ``evidence``); KILT's  fact
                    ``input``/``output[].answer`` layout too
``eli5``            KILT JSONL (``id``, ``input``, ``output[].answer``) or the Hugging   longform
                    Face ``eli5`` layout (``q_id``, ``title``, ``answers.text``)
``bamboogle``       ``Question``, ``Answer``, ``Q1``, ``A1``, ``Q2``, ``A2`` as a JSON   multihop
                    array, JSONL or CSV with that header (``A1``/``A2`` a string or a
                    list of strings)
==================  ==============================================================  =========

Whether a file is a JSON array or JSONL is decided by its content, not by its suffix: a
file that parses as one JSON array is an array, anything else is JSONL; a ``.csv`` file is
read as CSV.

Normalisation: question and answer strings have their whitespace collapsed
(``" ".join(text.split())``); so have paragraph titles and texts, and HotpotQA/2Wiki
sentences are stripped and joined with one space, exactly as :mod:`searchain_graph.ir.corpus`
does, so that :func:`corpus_paragraphs` gives the same ids as ``searchain index`` run on
the same QA file. ``answers`` holds the gold answer first and then its aliases,
deduplicated in order, empty strings dropped. A question's paragraphs are kept as the file
lists them (duplicates included); :func:`corpus_paragraphs` deduplicates their union.

Hops (``Example["hops"]``):

* HotpotQA: 2 (every question is a two-paragraph bridge or comparison question).
* MuSiQue: the number of steps in ``question_decomposition``; IRCoT's layout: the
  ``Nhop`` prefix of the question id.
* 2WikiMultihopQA: by ``type``: ``comparison``, ``inference`` and ``compositional`` are 2,
  ``bridge_comparison`` is 4 (two bridges, then a comparison). The type rule is used
  rather than ``len(evidences)`` because some comparison questions carry a third,
  redundant evidence triple; ``len(evidences)`` is the fallback for an unknown type, and
  ``None`` when there are no evidences either.
* StrategyQA: the number of steps in ``decomposition``.
* Bamboogle: 2. FEVER and ELI5: ``None``.

Decompositions: MuSiQue's sub-questions with their ``#k`` references replaced by the
answer of step *k*, and its Wikidata-style steps ``"S >> R"`` written as "What is the *R* of
*S*?", the question a chain would ask (the raw steps stay in ``meta["raw_decomposition"]``);
Bamboogle's ``Q1``/``A1``, ``Q2``/``A2`` (the first of each list of sub-answers; all of
them in ``meta["step_answers"]``); 2WikiMultihopQA's evidence triples ``(subject, relation,
object)`` as "What is the *relation* of *subject*?" with the object as answer (the dataset has no
natural-language sub-questions; the triples are its gold reasoning path); StrategyQA's
sub-questions with empty answers (their ``#k`` references cannot be resolved).

Identifiers: the dataset's own (``_id``, ``question_id``, ``id``, ``qid``, ``q_id``, as a
string); Bamboogle has none, so its questions are ``bamboogle-N`` by position in the file
(from 1) unless a record carries an ``id`` or ``qid``. A file with two questions under one
id is an error, since an evaluation run keys its records by id.

Errors: a record that cannot be read (invalid JSON, no question, no answer, a field of
the wrong type) raises :class:`DatasetFormatError` naming the file and line (``path:12``)
or, in a JSON array, the record (``path: record 12``), and the field. Nothing is skipped
silently, and no text is made from a number, a list or an object. JSON is read strictly
(:mod:`searchain_graph.ir.json_records`): ``NaN``, ``Infinity``, ``1e400``, an integer of more
than 4,300 digits (a long id must be a string, which is kept whatever its length) and nesting
too deep to parse are errors; lone surrogates (U+D800..U+DFFF, from JSON escapes) are replaced
by U+FFFD, with one warning per file.

Modules: this one is the public API (everything a caller needs is importable from here);
the parsers of the native formats are in :mod:`~searchain_graph.evaluation.dataset_formats`,
the :class:`Example` types, the registry and the field checks they share in
:mod:`~searchain_graph.evaluation.dataset_records`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from pathlib import Path

from langchain_core.documents import Document

from searchain_graph.evaluation.dataset_formats import FEVER_LABELS, PARSERS, TWOWIKI_HOPS, detect_record
from searchain_graph.evaluation.dataset_records import (
    DATASETS,
    TASKS,
    DatasetFormatError,
    Example,
    Paragraph,
    Step,
    describe,
    iter_records,
)
from searchain_graph.ir.corpus import paragraph_id

__all__ = [
    "ALIASES",
    "DATASETS",
    "FEVER_LABELS",
    "TASKS",
    "TWOWIKI_HOPS",
    "DatasetFormatError",
    "Example",
    "Paragraph",
    "Step",
    "canonical_name",
    "corpus_paragraphs",
    "detect_dataset",
    "iter_dataset",
    "load_dataset",
]


ALIASES: dict[str, str] = {
    "hotpot": "hotpotqa",
    "hotpotqa": "hotpotqa",
    "2wiki": "2wikimultihopqa",
    "2wikimultihopqa": "2wikimultihopqa",
    "musique": "musique",
    "strategyqa": "strategyqa",
    "fever": "fever",
    "eli5": "eli5",
    "bamboogle": "bamboogle",
}
"""Accepted names (lower case) and the canonical name each stands for."""


def canonical_name(name: str) -> str:
    """The canonical dataset name for ``name`` (see :data:`ALIASES`; case-insensitive).

    Raises:
        ValueError: ``name`` is not a known dataset.
    """
    key = name.strip().lower()
    if key not in ALIASES:
        raise ValueError(f"unknown dataset {name!r}; expected one of {', '.join(sorted(ALIASES))} (or 'auto')")
    return ALIASES[key]


def _check_path(path: str | Path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"dataset file not found: {path}")
    return path


def iter_dataset(name: str, path: str | Path) -> Iterator[Example]:
    """Yield the questions of a dataset file, in file order (JSONL is streamed).

    Args:
        name: The dataset (a name or alias from :data:`ALIASES`, case-insensitive), or
            ``"auto"`` to detect it with :func:`detect_dataset`.
        path: The file, in the dataset's native format.

    Raises:
        ValueError: ``name`` is not a known dataset.
        FileNotFoundError: ``path`` does not exist.
        DatasetFormatError: a record cannot be read, or two records share an id.
    """
    path = _check_path(path)
    dataset = detect_dataset(path) if name.strip().lower() == "auto" else canonical_name(name)
    parse = PARSERS[dataset]
    seen: dict[str, str] = {}
    for record, where, number in iter_records(path):
        if not isinstance(record, dict):
            raise DatasetFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
        example = parse(record, where, number)
        if example["qid"] in seen:
            qid = describe(example["qid"])
            raise DatasetFormatError(f"{where}: question id {qid} already used at {seen[example['qid']]}")
        seen[example["qid"]] = where
        yield example


def load_dataset(name: str, path: str | Path, *, limit: int | None = None) -> list[Example]:
    """Load the questions of a dataset file (see :func:`iter_dataset`).

    Args:
        name: The dataset name or alias, or ``"auto"``.
        path: The file, in the dataset's native format.
        limit: Keep only the first ``limit`` questions (the rest of the file is not read).

    Raises:
        ValueError: unknown ``name``, or a negative ``limit``.
        FileNotFoundError: ``path`` does not exist.
        DatasetFormatError: a record cannot be read.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    return list(islice(iter_dataset(name, path), limit))


def detect_dataset(path: str | Path) -> str:
    """Which dataset a file holds, judged by the fields of its first record.

    IRCoT's processed files all share one layout: a question id with an ``Nhop`` prefix
    means MuSiQue, a 2Wiki question ``type`` means 2WikiMultihopQA, anything else HotpotQA.

    Returns:
        The canonical dataset name.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        DatasetFormatError: the file is empty, its first record cannot be read, or its
            fields match no known dataset.
    """
    path = _check_path(path)
    for record, where, _ in iter_records(path, warn=False):  # iter_dataset warns when it reads the file
        if not isinstance(record, dict):
            raise DatasetFormatError(f"{where}: expected a JSON object, got {type(record).__name__}")
        dataset = detect_record(record)
        if dataset is None:
            fields = ", ".join(key if len(key) <= 40 else key[:37] + "..." for key in sorted(record)[:12])
            raise DatasetFormatError(f"{where}: fields ({fields}) match no known dataset ({', '.join(DATASETS)})")
        return dataset
    raise DatasetFormatError(f"{path}: no records")


def corpus_paragraphs(examples: Iterable[Example]) -> list[Document]:
    """The open-domain corpus: the union of the questions' paragraphs, as IRCoT and SearChain use it.

    Paragraphs are deduplicated by (title, text) in first-seen order and paragraphs with
    empty text are dropped, as :func:`searchain_graph.ir.corpus.iter_corpus` does, so the ids
    equal those that ``searchain index`` gives the same QA file.

    Returns:
        Documents with the paragraph text and metadata ``{"title", "id"}``, ``id`` being
        :func:`searchain_graph.ir.corpus.paragraph_id` of title and text.
    """
    docs: list[Document] = []
    seen: set[str] = set()
    for example in examples:
        for paragraph in example["paragraphs"]:
            title, text = paragraph["title"], paragraph["text"]
            if not text:
                continue
            pid = paragraph_id(title, text)
            if pid not in seen:
                seen.add(pid)
                docs.append(Document(page_content=text, metadata={"title": title, "id": pid}))
    return docs
