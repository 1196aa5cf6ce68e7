"""The evaluation datasets: their names and tasks, the :class:`Example` layout every one is read into.

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

:data:`DATASETS` holds the canonical names (as ``Example["dataset"]`` does), :data:`ALIASES` the
names accepted for them (:func:`canonical_name` looks one up), and :data:`TASKS` the graph's task
for each. Whatever its format, a question is read into one :class:`Example` (with its
:class:`Paragraph` and :class:`Step` items); a record that cannot be read raises
:class:`DatasetFormatError`.

The other dataset modules build on this one: :mod:`~searchain_graph.evaluation.dataset_formats`
reads one record of each native format into an :class:`Example` (and says how answers, hops,
decompositions and ids are derived), and :mod:`~searchain_graph.evaluation.dataset_loading` loads
a dataset file (:func:`~searchain_graph.evaluation.dataset_loading.load_dataset`) and gives the
corpus of its paragraphs.
"""

from __future__ import annotations

from typing import TypedDict

__all__ = [
    "ALIASES",
    "DATASETS",
    "TASKS",
    "DatasetFormatError",
    "Example",
    "Paragraph",
    "Step",
    "canonical_name",
]

DATASETS: tuple[str, ...] = ("hotpotqa", "musique", "2wikimultihopqa", "strategyqa", "fever", "eli5", "bamboogle")
"""The canonical dataset names, as stored in ``Example["dataset"]``."""

TASKS: dict[str, str] = {
    "hotpotqa": "multihop",
    "musique": "multihop",
    "2wikimultihopqa": "multihop",
    "bamboogle": "multihop",
    "strategyqa": "yesno",
    "fever": "fact",
    "eli5": "longform",
}
"""The graph's task name for each dataset."""

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


class Paragraph(TypedDict):
    """A paragraph given with a question."""

    title: str
    text: str
    is_supporting: bool


class Step(TypedDict):
    """One step of a gold decomposition (``answer`` is ``""`` when the dataset gives none)."""

    question: str
    answer: str


class Example(TypedDict):
    """One evaluation question, whatever the dataset."""

    qid: str
    dataset: str
    question: str
    answers: list[str]
    task: str
    hops: int | None
    paragraphs: list[Paragraph]
    decomposition: list[Step] | None
    meta: dict[str, object]


class DatasetFormatError(ValueError):
    """A dataset file has a record that cannot be read; the message names file and line (or record)."""
