"""The evaluation harness: every method, on the same LLM, retriever and reader, one JSONL line each.

:func:`run_evaluation` runs each (question, method) pair and appends one record to a JSONL
file as soon as it finishes, so an interrupted run loses nothing and a rerun resumes: pairs
already recorded without an error are skipped. Questions run concurrently when the LLM is
remote (``concurrency``); a local model runs one at a time.

A record holds the prediction, the metrics (cover-EM, EM, F1, and ROUGE-L for long form,
all against the gold answer and its aliases), the cost (LLM calls, words and tokens in and
out, rounds, retrieval and reader calls, wall time, and the CPU seconds this process and all others
used meanwhile: :mod:`~searchain_graph.evaluation.cpu_meter`) and, for SearChain, where each node of
the final path came from (``llm`` / ``corrected`` / ``completed``) and how many knowledge
items the final content cites. :mod:`searchain_graph.evaluation.report` turns records into the paper's
tables.

Methods: the names of :data:`~searchain_graph.evaluation.methods.METHODS` (SearChain, its
ablations and the paper's baselines). Each record there builds the method's LangGraph graph
(its ``factory``) and counts its reasoning steps (its ``steps``); the harness knows no method by
name.
"""

from __future__ import annotations

import json
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langgraph.cache.base import BaseCache

from searchain_graph.evaluation.budget import cut_before_answer
from searchain_graph.evaluation.comparisons import copies, correct, repairs_of, restated, where_lost
from searchain_graph.evaluation.cpu_meter import CpuMeter, contended
from searchain_graph.evaluation.datasets import Example
from searchain_graph.evaluation.method_spec import count_rounds
from searchain_graph.evaluation.methods import METHODS, SEARCHAIN, GraphFactory, parse_methods
from searchain_graph.evaluation.metrics import score
from searchain_graph.evaluation.node_judges import node_verdicts
from searchain_graph.evaluation.report import latest_records
from searchain_graph.evaluation.threshold_changes import check_scores, stale_at
from searchain_graph.ir.readers.base import Reader
from searchain_graph.llms.servers import describe_llm_failure
from searchain_graph.method.parsing import citations
from searchain_graph.viz.tree import compact_run

__all__ = [  # METHODS, GraphFactory and parse_methods live in evaluation.methods; re-exported here
    "METHODS",
    "GraphFactory",
    "RunSummary",
    "TEXT_FIELDS",
    "drop_torn_tail",
    "gold_fields",
    "make_record",
    "parse_methods",
    "read_records",
    "run_evaluation",
    "runtime_versions",
    "with_gold",
    "without_text",
]

RECORDED_PACKAGES = (
    "searchain-graph",
    "langgraph",
    "langchain-core",
    "transformers",
    "torch",
    "onnxruntime",
    "onnxruntime-genai",
    "xllamacpp",
)
"""The packages whose versions a record names: the ones that decide what a local model computes."""


def runtime_versions(packages: Iterable[str] = RECORDED_PACKAGES) -> dict[str, str]:
    """The installed versions of ``packages`` (those not installed are left out).

    A record carries them: a greedy reply can change where two tokens nearly tie when another
    ONNX Runtime or torch computes the same prompt, so two runs' records say what each ran on.
    """
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for name in packages:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            continue
    return found


def _steps(method: str, out: dict[str, Any]) -> int:
    """Reasoning steps (Table 4), counted by the method's record (its graph's ``rounds`` if unregistered)."""
    spec = METHODS.get(method)
    return (spec.steps if spec is not None else count_rounds)(out)


def gold_fields(example: Example) -> dict[str, Any]:
    """What a record of ``example`` carries so the report can judge each node IR changed.

    ``supporting``: the gold supporting paragraphs (title and text); ``hop_answers``: the answers
    of the gold decomposition, in order (MuSiQue's sub-answers, 2Wiki's evidence objects). A field
    the example lacks is left out.
    """
    fields: dict[str, Any] = {}
    gold = [{"title": p["title"], "text": p["text"]} for p in example.get("paragraphs") or [] if p["is_supporting"]]
    if gold:
        fields["supporting"] = gold
    hops = [s["answer"] for s in example.get("decomposition") or [] if s.get("answer")]
    if hops:
        fields["hop_answers"] = hops
    return fields


def with_gold(records: Sequence[dict[str, Any]], examples: Sequence[Example]) -> list[dict[str, Any]]:
    """``records`` with the gold fields of their examples (:func:`gold_fields`) filled in where missing.

    For records written before a field existed: the report reads them as if they had been written
    with it. Records that carry no tree (the report judges none of their nodes) and records of
    other questions are returned as they are; nothing is written back.
    """
    by_question = {(e["dataset"], e["qid"]): e for e in examples}
    filled = []
    for record in records:
        example = by_question.get((str(record.get("dataset")), str(record.get("qid"))))
        if example is not None and record.get("tree"):
            missing = {k: v for k, v in gold_fields(example).items() if k not in record}
            record = {**record, **missing} if missing else record
        filled.append(record)
    return filled


def make_record(
    example: Example, method: str, out: dict[str, Any] | None, seconds: float, error: str | None = None
) -> dict[str, Any]:
    """One JSONL record for ``example`` answered by ``method`` (``out`` is the graph's output)."""
    out = out or {}
    prediction = str(out.get("answer") or "")
    references = out.get("references") or []
    record: dict[str, Any] = {
        "qid": example["qid"],
        "dataset": example["dataset"],
        "method": method,
        "question": example["question"],
        "answers": example["answers"],
        "hops": example.get("hops"),
        "prediction": prediction,
        "final_content": str(out.get("final_content") or ""),
        "metrics": score(prediction, example["answers"], example["task"]) if error is None else {},
        "usage": out.get("usage") or {},
        "rounds": int(out.get("rounds") or 0),
        "steps": _steps(method, out) if error is None else 0,
        "seconds": round(seconds, 3),
        "error": error,
        "warnings": [" ".join(str(w).split())[:300] for w in out.get("warnings") or []][:20],
    }
    if references:
        record["sources"] = [r.get("source") for r in references]
        record["cited"] = len(set(citations(record["final_content"])))
        record.update(gold_fields(example))
    if out.get("tree"):  # SearChain's Tree-of-Reasoning, for the report's per-question pages
        record["tree"] = compact_run(out)
    return record


TEXT_FIELDS: tuple[str, ...] = (
    "question",
    "answers",
    "final_content",
    "warnings",
    "tree",
    "supporting",
    "hop_answers",
)
"""The fields of a record that quote the dataset or its passages: :func:`without_text` leaves them out."""


def without_text(record: dict[str, Any]) -> dict[str, Any]:
    """``record`` without the dataset's text, for a dataset whose licence does not allow sharing it.

    Left out: the question, the gold answers and supporting paragraphs, the final content, the
    warnings and the Tree-of-Reasoning (:data:`TEXT_FIELDS`). Kept: the question's id, the
    prediction, the metrics, the costs, where the final path's nodes came from, and what the
    report's sections would read off the text, worked out while it is at hand: IR's changed nodes
    as judged against the gold (``node_verdicts``), the chain repairs that fired (``repairs``),
    a reply cut before its answer (``cut_before_answer``), each IR check's action, *f* and θ
    (``checks``: what :mod:`~searchain_graph.evaluation.threshold_changes` reads), a hit on the question's own words
    (``restated``), the demonstration names copied (``copied``) and where a wrong SearChain
    answer lost the gold (``where_lost``). So every table, paired difference and node judge of
    the report reads the same from it; the report has no tree page for it, and the sections
    that read each round (the reader's *f* by band, corrections taken back) leave it out. A
    record already without text is returned as it is.
    """
    if not any(field in record for field in TEXT_FIELDS):
        return record
    kept = {k: v for k, v in record.items() if k not in TEXT_FIELDS}
    kept["repairs"] = repairs_of(record)
    kept["cut_before_answer"] = cut_before_answer(record)
    kept["restated"] = restated(record)
    if record.get("tree"):
        kept["checks"] = check_scores(record)
    spec = METHODS.get(str(record.get("method")))
    if spec is not None and spec.demonstration_names:
        kept["copied"] = copies(record, spec.demonstration_names)
    if verdicts := node_verdicts(record):
        kept["node_verdicts"] = verdicts
    if record.get("method") == "searchain" and record.get("supporting") and not correct(record):
        kept["where_lost"] = where_lost(record)
    return kept


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a results file (a missing file has none); a torn last line is ignored.

    The file is read as bytes and each line decoded on its own, so a last line cut inside a
    UTF-8 character is torn like one cut inside the JSON: it is left out with a warning.

    Raises:
        ValueError: a line other than the last is not UTF-8 or not valid JSON (the message names
            the file and the line).
    """
    path = Path(path)
    if not path.is_file():
        return []
    lines = path.read_bytes().splitlines()
    records = []
    for lineno, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            records.append(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            why = "not UTF-8" if isinstance(exc, UnicodeDecodeError) else exc.msg
            if lineno == len(lines):  # an interrupted write: that pair is simply run again
                warnings.warn(f"{path}:{lineno}: torn last line ignored ({why})", UserWarning, stacklevel=2)
                break
            raise ValueError(f"{path}:{lineno}: not a results record ({why})") from exc
    return records


def drop_torn_tail(path: Path) -> None:
    """Cut an interrupted last write off ``path``, or end a whole last record with its newline.

    The records appended next then start on a line of their own; a torn record's pair is run
    again, a whole one (valid JSON, only its newline missing) is kept.
    """
    if not path.is_file():
        return
    with path.open("rb+") as handle:
        size = handle.seek(0, 2)
        if size == 0:
            return
        handle.seek(max(0, size - 1))
        if handle.read(1) == b"\n":
            return
        handle.seek(0)
        data = handle.read()
        start = data.rfind(b"\n") + 1
        try:
            json.loads(data[start:].decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            handle.truncate(start)
        else:
            handle.seek(0, 2)
            handle.write(b"\n")


@dataclass
class RunSummary:
    """What :func:`run_evaluation` did.

    Attributes:
        ran: Pairs run now.
        skipped: Pairs already in the results file.
        errors: Pairs that raised (recorded with their error).
        records: Every record in the file for the requested examples and methods.
        question_records: Every record in the file for the requested examples, of any method
            (what a report over the file's methods for these questions draws).
    """

    ran: int
    skipped: int
    errors: int
    records: list[dict[str, Any]]
    question_records: list[dict[str, Any]]


def run_evaluation(
    examples: Sequence[Example],
    methods: Sequence[str],
    *,
    llm: BaseChatModel,
    retriever: BaseRetriever,
    reader: Reader,
    out_path: str | Path,
    concurrency: int = 1,
    progress: Callable[[dict[str, Any]], None] | None = None,
    extra: dict[str, Any] | None = None,
    options: Mapping[str, Any] | None = None,
    rerun_contended: bool = False,
    rerun_threshold: bool = False,
    cache: BaseCache[Any] | None = None,
    keep_text: bool = True,
) -> RunSummary:
    """Run ``methods`` on ``examples``, appending one record per pair to ``out_path``.

    Args:
        examples: Questions (see :mod:`searchain_graph.evaluation.datasets`).
        methods: Names from :data:`~searchain_graph.evaluation.methods.METHODS`.
        llm: The one LLM every method uses.
        retriever: The one retriever every retrieval method uses.
        reader: The one reader (SearChain, Self-Ask).
        out_path: Results JSONL; existing records for the same (qid, method) without an error
            are kept and skipped.
        concurrency: Pairs run at once (use > 1 only with a remote LLM).
        progress: Called with each new record.
        extra: Fields added to every record (model, retriever, reader names...).
        options: Method options (SearChain's ``Context`` fields: ``preset``, ``demonstrations``,
            ``duplicates``...): each method gets those its record declares
            (:attr:`~searchain_graph.evaluation.method_spec.MethodSpec.options`), and its records
            carry them as ``options``. JSON scalars only (strings, numbers, booleans), so that records say
            what they were made with.
        rerun_contended: Run again the pairs whose last record's seconds were measured beside other
            work (:func:`~searchain_graph.evaluation.cpu_meter.contended`); the new record
            supersedes it in the report, and the old one stays in the file.
        rerun_threshold: Run again the SearChain pairs whose recorded IR checks this run's θ
            could decide otherwise (:func:`~searchain_graph.evaluation.threshold_changes.stale_at`:
            an *f* between the θ a check was decided at and this one), after θ moved; as
            for ``rerun_contended``, the new record supersedes the old.
        cache: A LangGraph cache for the methods that take one (SearChain and its ablations with
            IR): their retrievals and readings are cached tasks, shared by every method and
            question of the run (and by later runs, for a persistent cache); the records' ``usage``
            counts the hits. Results do not depend on it.
        keep_text: ``False``: write each record :func:`without_text`, for a dataset whose licence
            does not allow sharing its text, so that the results file can be kept where the
            dataset cannot (a resumed run reads either kind).

    Returns:
        A :class:`RunSummary`.

    Raises:
        TypeError: an option's value is not a string.
        ValueError: ``out_path`` holds records of a method made with other options: a resumed run
            would mix two settings under one name (write to another file).
    """
    odd = sorted(k for k, v in (options or {}).items() if v is not None and not isinstance(v, (str, int, float)))
    if odd:
        raise TypeError(
            f"evaluation options must be strings, numbers or booleans, so that records name them; not: {', '.join(odd)}"
        )
    methods = parse_methods(methods)
    out_path = Path(out_path)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    drop_torn_tail(out_path)
    recorded = read_records(out_path)  # the file's only read: the summary adds this run's records to it
    existing = {(r["qid"], r["method"]): r for r in recorded if not r.get("error")}
    if rerun_contended:
        existing = {key: r for key, r in existing.items() if not contended(r)}
    chosen = {m: METHODS[m].options_of(options or {}) for m in methods}
    if rerun_threshold:
        from searchain_graph.method.graph import resolve_threshold

        theta = {
            m: resolve_threshold(reader, chosen[m].get("confidence_threshold"))[0]
            for m in methods
            if METHODS[m].builder == SEARCHAIN
        }
        existing = {key: r for key, r in existing.items() if key[1] not in theta or not stale_at(r, theta[key[1]])}
    for (qid, method), record in existing.items():
        if method in chosen and (record.get("options") or {}) != chosen[method]:
            raise ValueError(
                f"{out_path} holds {method} records made with options {record.get('options') or {}} (question "
                f"{qid}); this run asks for {chosen[method]}: write to another --out, or rerun with the same options"
            )
    graphs: dict[tuple[str, str], Any] = {}
    lock = threading.Lock()

    def graph_for(method: str, task: str) -> Any:
        with lock:
            key = (method, task)
            if key not in graphs:
                graphs[key] = METHODS[method](llm, retriever, reader, task, cache=cache, **chosen[method])
            return graphs[key]

    todo = [(ex, m) for ex in examples for m in methods if (ex["qid"], m) not in existing]
    new: list[dict[str, Any]] = []

    def run_one(example: Example, method: str) -> dict[str, Any]:
        meter = CpuMeter()
        start = time.perf_counter()
        try:
            out = graph_for(method, example["task"]).invoke(
                {"question": example["question"]},
                config={"run_name": method, "metadata": {"qid": example["qid"], "dataset": example["dataset"]}},
            )
            record = make_record(example, method, out, time.perf_counter() - start)
        except Exception as exc:  # recorded, not raised: one bad pair must not stop a long run
            error = f"{type(exc).__name__}: {describe_llm_failure(exc, llm) or exc}"
            record = make_record(example, method, None, time.perf_counter() - start, error)
        reading = meter.stop()
        if reading is not None:  # what this process and every other one took meanwhile
            record["cpu"] = reading.as_record()
        record.update(extra or {})
        if chosen[method]:
            record["options"] = chosen[method]
        return record if keep_text else without_text(record)

    def save(record: dict[str, Any]) -> None:
        with lock, out_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            new.append(record)
        if progress is not None:
            progress(record)

    if concurrency <= 1:
        for example, method in todo:
            save(run_one(example, method))
    else:
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            pending: set[Future[dict[str, Any]]] = set()
            queue: Iterable[tuple[Example, str]] = iter(todo)
            for example, method in queue:
                pending.add(pool.submit(run_one, example, method))
                if len(pending) >= 2 * concurrency:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for future in done:
                        save(future.result())
            for future in pending:
                save(future.result())
    wanted = {(ex["qid"], m) for ex in examples for m in methods}
    asked = {ex["qid"] for ex in examples}
    # the file as it now stands (what it held, then what this run appended, in order); a rerun's record
    # supersedes the pair's old one (the report's rule)
    of_questions = latest_records(r for r in [*recorded, *new] if r["qid"] in asked)
    return RunSummary(
        ran=len(new),
        skipped=len(wanted) - len(todo),
        errors=sum(1 for r in new if r.get("error")),
        records=[r for r in of_questions if (r["qid"], r["method"]) in wanted],
        question_records=of_questions,
    )
