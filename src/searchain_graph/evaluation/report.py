"""Reports: the paper's tables from evaluation records, with the paper's figures beside ours.

:func:`write_report` reads the records of :mod:`searchain_graph.evaluation.harness` (one per question
and method) and writes ``report.md`` plus two plots (``accuracy.png``: cover-EM per method
and dataset; ``accuracy_vs_words.png``: cover-EM against LLM words per question). The
tables follow the paper (Xu et al., WWW 2024):

* **Table 1**: cover-EM (and EM, F1) per method and dataset;
* **Table 2**: where the nodes of SearChain's final path came from: the LLM, corrected by
  IR, or completed by IR;
* **Table 3a**: on the questions where IR intervened (S_IR), accuracy without IR (the
  ``searchain_no_ir`` records) and with it, beside accuracy without IR on all questions (S);
* **Table 3b**: of the questions SearChain without IR answers correctly (S_t), the share
  SearChain with IR gets wrong: how often IR misleads the LLM, as the paper counts it. The
  last column says on how many of those IR corrected or completed a node of the final path;
  the rest went wrong for other reasons (another generation round, the tracing prompt);
* **Table 4**: reasoning steps per question by number of hops (methods without IR);
* **Table 5**: cost per question: LLM words in and out, rounds, time;
* **SKC**: knowledge items cited per SearChain answer, and the share of answers citing none;
* **Paired differences**: SearChain against every other method on the same questions, cover-EM
  points with a 95% bootstrap interval over questions and McNemar's exact p
  (:mod:`~searchain_graph.evaluation.significance`); a lead needs the interval to exclude 0 and
  p < 0.05, else the difference is within noise at this sample;
* **IR's changes**: on the questions where IR changed the final path (S_IR), whether the change
  helped (SearChain right, SearChain w/o IR wrong), misled (the reverse) or was neutral; and node
  by node, against the question's gold supporting paragraphs (records keep them as
  ``supporting``);
* **Demonstration copying**: answers and chains that name an entity of the prompt's worked
  examples for a question not about it (the method's ``demonstration_names``);
* **Chain repairs**: how often each repair of a chain fired (a loop ended, a cut node dropped, a
  node answering "unknown" taken as unsolved, ...);
* **Replies cut by the token budget**: one-call replies the budget ended before they stated an
  answer (:mod:`~searchain_graph.evaluation.budget`), per method: a figure they lower is a floor;
* **Corrections taken back**: how often a later round repeated a node IR had changed with the
  answer IR rejected, and how often those questions were answered right.

The paper's figures for a method (Tables 1, 4 and 5) come from its record in
:data:`~searchain_graph.evaluation.methods.METHODS`; those for a dataset and for SearChain alone
(Tables 2 and 3, SKC) are kept here. Records with an error are counted as wrong answers and
listed, never dropped.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from searchain_graph._files import remove_stale_temporaries, write_aside, written_aside
from searchain_graph.evaluation.budget import cut_section
from searchain_graph.evaluation.comparisons import (
    changes_section,
    copying_section,
    correct,
    intervened,
    misses_section,
    paired_section,
    repairs_section,
    restated_section,
    reverts_section,
)
from searchain_graph.evaluation.cpu_meter import CONTENDED_CORES, contended
from searchain_graph.evaluation.methods import METHODS
from searchain_graph.evaluation.node_judges import node_changes_section, threshold_section

PAPER_TABLE2 = {
    "hotpotqa": (74.56, 20.94, 4.50),
    "musique": (78.83, 14.60, 6.57),
    "2wikimultihopqa": (75.83, 18.96, 5.21),
    "strategyqa": (94.98, 2.78, 2.24),
}
"""Table 2: % of nodes from the LLM, corrected by IR, completed by IR."""

PAPER_TABLE3A = {
    "hotpotqa": (38.36, 31.38, 60.86),
    "musique": (13.61, 10.20, 18.49),
    "2wikimultihopqa": (40.49, 32.60, 50.52),
    "strategyqa": (75.62, 68.96, 78.42),
}
"""Table 3a: accuracy w/o IR on S, w/o IR on S_IR, with IR on S_IR."""

PAPER_TABLE3B = {"hotpotqa": 6.33, "musique": 6.50, "2wikimultihopqa": 12.71, "strategyqa": 5.31}
"""Table 3b: % of S_t that IR makes wrong (SearChain)."""

PAPER_SKC = 2.882


def tree_link(record: dict[str, Any]) -> str | None:
    """Where the report keeps a record's Tree-of-Reasoning page (relative), if it has one."""
    if not record.get("tree"):
        return None
    qid = re.sub(r"[^A-Za-z0-9._-]+", "_", str(record["qid"]))[:80]
    return f"trees/{record['dataset']}/{record['method']}/{qid}.md"


def tree_output(record: dict[str, Any]) -> dict[str, Any]:
    """A record's tree in the shape :func:`searchain_graph.viz.render_tree` reads."""
    return {
        **record["tree"],
        "question": record["question"],
        "answer": record.get("prediction") or "",
        "final_content": record.get("final_content") or "",
        "rounds": record.get("rounds") or 0,
    }


def _tree_section(records: Sequence[dict[str, Any]], limit: int = 500) -> list[str]:
    rows = [r for r in records if tree_link(r)]
    if not rows:
        return []
    lines = ["", "## Each question's Tree-of-Reasoning", ""]
    lines += ["Why a question went right or wrong: every round's chain, IR's verdict on each node, the passages.", ""]
    lines += ["| dataset | method | question | gold | prediction | cover-EM | tree |", "|---|---|---|---|---|---:|---|"]
    for r in rows[:limit]:
        question = " ".join(str(r["question"]).split())[:90].replace("|", "\\|")
        prediction = " ".join(str(r.get("prediction") or "").split())[:60].replace("|", "\\|")
        gold = " / ".join(str(a) for a in r.get("answers") or [])[:60].replace("|", "\\|")
        cover = r.get("metrics", {}).get("cover_em")
        lines.append(
            f"| {r['dataset']} | {r['method']} | {question} | {gold} | {prediction} | "
            f"{_fmt(100 * cover if cover is not None else None, 0)} | [tree]({tree_link(r)}) |"
        )
    if len(rows) > limit:
        lines.append(f"\n({len(rows) - limit} more in `trees/`.)")
    return lines


def _pct(values: Iterable[float]) -> str:
    values = list(values)
    return f"{100 * statistics.fmean(values):.1f}" if values else "–"


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _by(records: Iterable[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        groups[tuple(record.get(k) for k in keys)].append(record)
    return groups


def latest_records(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (dataset, qid, method): the last without an error, else the last."""
    latest: dict[tuple[Any, ...], dict[str, Any]] = {}
    for record in records:
        key = (record.get("dataset"), record.get("qid"), record.get("method"))
        if key not in latest or latest[key].get("error") or not record.get("error"):
            latest[key] = record
    return list(latest.values())


def versions_line(records: Sequence[dict[str, Any]]) -> str:
    """What the records ran on (their ``versions``), one entry per set of versions, with its count.

    Empty when no record names its versions (records written before they were kept).
    """
    sets = Counter(
        ", ".join(f"{k} {v}" for k, v in sorted(r["versions"].items()))
        for r in records
        if isinstance(r.get("versions"), dict) and r["versions"]
    )
    if not sets:
        return ""
    unknown = len(records) - sum(sets.values())
    listed = "; ".join(f"{text} ({_records(n)})" for text, n in sets.most_common())
    return f"Ran on: {listed}" + (f"; {_records(unknown)} written before versions were kept." if unknown else ".")


def _records(n: int) -> str:
    return f"{n} record" + ("" if n == 1 else "s")


def render_report(records: Sequence[dict[str, Any]], *, title: str = "SearChain evaluation") -> str:
    """The Markdown report for ``records`` (see the module docstring for the tables)."""
    records = latest_records(records)
    datasets = sorted({r["dataset"] for r in records})
    methods = list(dict.fromkeys(r["method"] for r in records))
    cell = _by(records, "method", "dataset")
    lines = [f"# {title}", ""]
    models = sorted({str(r.get("model")) for r in records if r.get("model")})
    if models:
        lines += [
            f"LLM: {', '.join(models)}. Questions per dataset: "
            + ", ".join(f"{d} {len({r['qid'] for r in records if r['dataset'] == d})}" for d in datasets)
            + ".",
            "",
        ]
    if ran_on := versions_line(records):
        lines += [ran_on, ""]

    lines += ["## Table 1: accuracy (cover-EM %; EM / F1 in brackets; paper in italics)", ""]
    lines += ["| method | " + " | ".join(datasets) + " |", "|---|" + "---:|" * len(datasets)]
    for method in methods:
        spec = METHODS.get(method)  # the paper's figures for it, if the registry knows it
        row = []
        for dataset in datasets:
            rs = cell.get((method, dataset), [])
            paper = spec.paper_accuracy.get(dataset) if spec else None
            text = (
                f"{_pct(float(correct(r)) for r in rs)} ({_pct(r.get('metrics', {}).get('em', 0.0) for r in rs)}"
                f" / {_pct(r.get('metrics', {}).get('f1', 0.0) for r in rs)})"
                if rs
                else "–"
            )
            row.append(text + (f" *{paper}*" if paper is not None else ""))
        lines.append(f"| {method} | " + " | ".join(row) + " |")

    searchain = [r for r in records if r["method"] == "searchain"]
    if searchain:
        lines += ["", "## Table 2: where the nodes of SearChain's final path came from (%; paper in italics)", ""]
        lines += ["| dataset | nodes | LLM | corrected by IR | completed by IR |", "|---|---:|---:|---:|---:|"]
        for dataset in datasets:
            sources = [s for r in searchain if r["dataset"] == dataset for s in r.get("sources", [])]
            if not sources:
                continue
            shares_ref: Sequence[float | None] = PAPER_TABLE2.get(dataset) or (None, None, None)
            shares = [100 * sources.count(kind) / len(sources) for kind in ("llm", "corrected", "completed")]
            cells = [f"{s:.1f}" + (f" *{p}*" if p is not None else "") for s, p in zip(shares, shares_ref, strict=True)]
            lines.append(f"| {dataset} | {len(sources)} | " + " | ".join(cells) + " |")

    no_ir = {(r["dataset"], r["qid"]): r for r in records if r["method"] == "searchain_no_ir"}
    if searchain and no_ir:
        lines += ["", "## Table 3: positive and negative effects of IR (cover-EM %; paper in italics)", ""]
        lines += [
            "| dataset | w/o IR on S | w/o IR on S_IR | with IR on S_IR | S_IR | IR misleads (% of S_t) | S_t "
            "| of those, IR intervened |"
        ]
        lines += ["|---|---:|---:|---:|---:|---:|---:|---:|"]
        for dataset in datasets:
            pairs = [
                (r, no_ir[(dataset, r["qid"])])
                for r in searchain
                if (dataset, r["qid"]) in no_ir and r["dataset"] == dataset
            ]
            if not pairs:
                continue
            s_ir = [(r, n) for r, n in pairs if intervened(r)]
            s_t = [(r, n) for r, n in pairs if correct(n)]
            misled = [r for r, _ in s_t if not correct(r)]
            paper_a = PAPER_TABLE3A.get(dataset, (None, None, None))
            paper_b = PAPER_TABLE3B.get(dataset)

            def with_paper(value: str, paper: float | None) -> str:
                return value + (f" *{paper}*" if paper is not None else "")

            lines.append(
                f"| {dataset} | {with_paper(_pct(float(correct(n)) for _, n in pairs), paper_a[0])} | "
                f"{with_paper(_pct(float(correct(n)) for _, n in s_ir), paper_a[1])} | "
                f"{with_paper(_pct(float(correct(r)) for r, _ in s_ir), paper_a[2])} | {len(s_ir)} | "
                f"{with_paper(_pct(float(not correct(r)) for r, _ in s_t), paper_b)} | {len(s_t)} | "
                f"{sum(1 for r in misled if intervened(r))} of {len(misled)} |"
            )

    hops = sorted({int(r["hops"]) for r in records if r.get("hops")})
    if hops:
        lines += ["", "## Table 4: reasoning steps per question, by hops (paper, MuSiQue, in italics)", ""]
        lines += ["| method | " + " | ".join(f"{h}-hop" for h in hops) + " |", "|---|" + "---:|" * len(hops)]
        for method in methods:
            spec = METHODS.get(method)
            row = []
            for h in hops:
                steps = [r.get("steps", 0) for r in records if r["method"] == method and r.get("hops") == h]
                steps_ref = spec.paper_steps if spec else None
                ref = f" *{steps_ref[h - 2]}*" if steps_ref and 2 <= h <= 4 else ""
                row.append((f"{statistics.fmean(steps):.2f}" if steps else "–") + ref)
            lines.append(f"| {method} | " + " | ".join(row) + " |")

    lines += ["", "## Table 5: cost per question (means; paper in italics)", ""]
    lines += ["| method | words in | words out | LLM calls | tokens in / out | rounds | retrievals | reads | s |"]
    lines += ["|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for method in methods:
        spec = METHODS.get(method)
        rs = [r for r in records if r["method"] == method]

        def mean(key: str, rs: list[dict[str, Any]] = rs) -> float:
            return statistics.fmean(float(r.get("usage", {}).get(key, 0) or 0) for r in rs)

        cost = spec.paper_cost if spec else None
        lines.append(
            f"| {method} | {mean('words_in'):.0f}{f' *{cost[0]}*' if cost else ''} | "
            f"{mean('words_out'):.0f}{f' *{cost[1]}*' if cost else ''} | {mean('llm_calls'):.2f} | "
            f"{mean('input_tokens'):.0f} / {mean('output_tokens'):.0f} | "
            f"{statistics.fmean(r.get('rounds', 0) for r in rs):.2f}{f' *{cost[2]}*' if cost else ''} | "
            f"{mean('retrieval_calls'):.2f} | {mean('reader_calls'):.2f} | "
            f"{statistics.fmean(r.get('seconds', 0.0) for r in rs):.1f}{f' *{cost[3]}*' if cost else ''} |"
        )
    busy = [r for r in records if contended(r)]
    if busy:
        counts = Counter(r["method"] for r in busy)
        by_method = ", ".join(f"{m} {counts[m]}" for m in methods if counts[m])
        lines += [
            "",
            f"**Seconds measured beside other work:** {len(busy)} of {len(records)} records ({by_method}) ran while "
            f"other processes used at least {CONTENDED_CORES} of a core on average (the records' `cpu`): their "
            "seconds are longer than on a quiet machine.",
        ]
    concurrency = sorted({int(r.get("concurrency") or 1) for r in records})
    if concurrency != [1]:
        lines += [
            "",
            f"Seconds are wall time per pair with {', '.join(map(str, concurrency))} pair(s) running at once "
            "(a local model batches their calls): they include waiting for the other pairs. Compare methods by "
            "words and tokens; compare seconds only between runs made the same way.",
        ]
    if searchain:
        skc = [r.get("cited", 0) for r in searchain]
        lines += [
            "",
            f"**SKC** (knowledge items cited per SearChain answer): {statistics.fmean(skc):.2f} (paper: {PAPER_SKC}); "
            f"answers citing no passage: {sum(1 for c in skc if not c)} of {len(skc)}.",
        ]
    lines += paired_section(records, datasets, methods)
    lines += changes_section(searchain, no_ir, datasets)
    lines += node_changes_section(records, datasets)
    lines += threshold_section(records, datasets)
    lines += copying_section(records, methods)
    lines += repairs_section(records, methods)
    lines += cut_section(records, datasets, methods)
    lines += reverts_section(records, methods)
    lines += misses_section(records, datasets)
    lines += restated_section(records, datasets, methods)
    lines += _tree_section(searchain_trees(records))
    errors = [r for r in records if r.get("error")]
    if errors:
        lines += ["", f"## Errors ({len(errors)}; counted as wrong)", ""]
        lines += [f"* {r['dataset']} {r['qid']} {r['method']}: {r['error']}" for r in errors[:50]]
    return "\n".join(lines) + "\n"


def write_plots(records: Sequence[dict[str, Any]], directory: str | Path) -> list[Path]:
    """``accuracy.png`` and ``accuracy_vs_words.png`` in ``directory``; none without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    records = latest_records(records)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    datasets = sorted({r["dataset"] for r in records})
    methods = list(dict.fromkeys(r["method"] for r in records))
    cell = _by(records, "method", "dataset")
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(methods) * max(1, len(datasets)) / 2), 4))
    width = 0.8 / max(1, len(datasets))
    for j, dataset in enumerate(datasets):
        values = [
            100 * statistics.fmean(float(correct(r)) for r in cell[(m, dataset)]) if cell.get((m, dataset)) else 0.0
            for m in methods
        ]
        ax.bar([i + j * width for i in range(len(methods))], values, width, label=dataset)
    ax.set_xticks([i + width * (len(datasets) - 1) / 2 for i in range(len(methods))], methods, rotation=30, ha="right")
    ax.set_ylabel("cover-EM (%)")
    ax.legend()
    fig.tight_layout()
    paths = [directory / "accuracy.png"]
    with written_aside(paths[0]) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(6, 4))
    for method in methods:
        rs = [r for r in records if r["method"] == method]
        words = statistics.fmean(
            float(r.get("usage", {}).get("words_in", 0) or 0) + float(r.get("usage", {}).get("words_out", 0) or 0)
            for r in rs
        )
        accuracy = 100 * statistics.fmean(float(correct(r)) for r in rs)
        ax.scatter([words], [accuracy])
        ax.annotate(method, (words, accuracy), fontsize=8, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("LLM words per question (in + out)")
    ax.set_ylabel("cover-EM (%)")
    fig.tight_layout()
    paths.append(directory / "accuracy_vs_words.png")
    with written_aside(paths[1]) as tmp:
        fig.savefig(tmp, dpi=120, format="png")
    plt.close(fig)
    return paths


def searchain_trees(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The latest records that carry a tree, SearChain's first."""
    rows = [r for r in latest_records(records) if r.get("tree")]
    return sorted(rows, key=lambda r: (r["dataset"], r["method"] != "searchain", r["method"], str(r["qid"])))


def write_report(
    records: Sequence[dict[str, Any]], directory: str | Path, *, title: str = "SearChain evaluation"
) -> list[Path]:
    """Write ``report.md``, the plots and each question's tree page to ``directory``; returns the paths.

    Every file is written aside and renamed, so a killed run leaves the previous report's files
    whole; the temporary files a killed run left are removed first.
    """
    from searchain_graph.viz import write_tree

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(directory, recursive=True)
    path = write_aside(directory / "report.md", render_report(records, title=title))
    trees = [write_tree(tree_output(r), directory / str(tree_link(r))) for r in searchain_trees(records)]
    return [path, *write_plots(records, directory), *trees]
