"""The tracing step again over recorded runs: how the final content changes with the tracing prompt.

Tracing is SearChain's last step: its input is the question and the correct path *R* (each node's
query, the answer kept, the passage IR checked it with). A run's record holds *R* (passages by
id), so the step can be run again on it alone with another tracing setting, one LLM call per
question, and scored: the end-to-end figure the whole run would give with that setting, at a
fraction of its cost. ``--tracing pairs`` (the records' own setting) measures how well a replay
reproduces the recorded answers.

The step is the package's own (:meth:`SearChainSteps.tracing` and the final content's checks),
driven here with the LLM the evaluation uses::

    python benchmarks/tracing_replay.py --data ../shared/data/hotpotqa/ircot_dev_subsampled.first200.jsonl \\
        --records runs/dev.jsonl --tracing passages --out runs/replay-passages.jsonl

``--first N`` skips the data file's first N questions (HotpotQA's reported 100): development
questions only.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, get_args

from searchain_graph.evaluation.dataset_loading import corpus_paragraphs, detect_dataset, load_dataset
from searchain_graph.evaluation.harness import drop_torn_tail, read_records
from searchain_graph.evaluation.metrics import score
from searchain_graph.evaluation.significance import paired_difference
from searchain_graph.llms.loading import load_chat_model
from searchain_graph.method.context import Context, TracingInput
from searchain_graph.method.nodes import SearChainSteps
from searchain_graph.method.steps import Generate


def replay_state(record: dict[str, Any], passages: dict[str, str]) -> dict[str, Any]:
    """The state the tracing step reads, rebuilt from a record (each passage's full text by its id)."""
    tree = record["tree"]
    path = []
    for ref in tree.get("references") or []:
        ref = dict(ref)
        doc = ref.get("document")
        if doc:
            pid = (doc.get("metadata") or {}).get("id")
            ref["document"] = {**doc, "page_content": passages.get(pid, doc["page_content"])}
        path.append(ref)
    branches = [{**b, "raw": b.get("raw") or ""} for b in tree.get("tree") or []]
    return {"question": record["question"], "references": path, "tree": branches}


def traced(steps: SearChainSteps, llm: Any, state: dict[str, Any], settings: Context) -> dict[str, Any]:
    """Run the tracing step body on ``state``, its LLM calls answered by ``llm``."""
    body = steps.tracing(state, settings)  # type: ignore[arg-type]
    try:
        request = next(body)
        while True:
            assert isinstance(request, Generate), request
            reply = llm.invoke(list(request.messages), stop=list(request.stop) if request.stop else None)
            request = body.send(str(reply.content))
    except StopIteration as done:
        return dict(done.value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="the dataset file the records were run on")
    parser.add_argument("--records", required=True, help="SearChain records (JSONL)")
    parser.add_argument("--tracing", choices=get_args(TracingInput), required=True)
    parser.add_argument("--first", type=int, default=100, help="skip the data file's first N questions (reported)")
    parser.add_argument("--limit", type=int, default=None, help="replay at most N development questions")
    parser.add_argument("--model", default=None, help="the LLM, as for `searchain eval`")
    parser.add_argument("--concurrency", type=int, default=2)
    parser.add_argument("--out", type=Path, required=True, help="replayed records (JSONL; resumed)")
    args = parser.parse_args()

    examples = load_dataset(detect_dataset(args.data), args.data)
    dev = {e["qid"]: e for e in examples[args.first :]}
    passages = {d.metadata["id"]: d.page_content for d in corpus_paragraphs(examples)}
    records = [
        r
        for r in read_records(args.records)
        if r.get("method") == "searchain" and r.get("tree") and r.get("qid") in dev
    ]
    records = records[: args.limit] if args.limit else records
    drop_torn_tail(args.out)  # a replay killed mid-write: its last row is replayed again
    done = {row["qid"]: row for row in read_records(args.out)}
    fields = set(Context.__dataclass_fields__)
    options = {k: v for k, v in ((records[0].get("options") or {}) if records else {}).items() if k in fields}
    options["tracing"] = args.tracing
    settings = Context(**options).resolved(threshold=1.5, reader_yes_no=False)
    llm = load_chat_model(args.model, max_new_tokens=256, max_batch_size=args.concurrency)
    steps = SearChainSteps()

    def one(record: dict[str, Any]) -> dict[str, Any]:
        out = traced(steps, llm, replay_state(record, passages), settings)
        return {
            "qid": record["qid"],
            "tracing": args.tracing,
            "answers": record["answers"],
            "prediction": out.get("answer"),
            "final_content": out.get("final_content"),
            "metrics": score(out.get("answer"), record["answers"]),
            "recorded": {"prediction": record["prediction"], "metrics": record["metrics"]},
            "warnings": out.get("warnings") or [],
        }

    todo = [r for r in records if r["qid"] not in done]
    with ThreadPoolExecutor(args.concurrency) as pool, args.out.open("a", encoding="utf-8") as handle:
        for row in pool.map(one, todo):
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            handle.flush()
            done[row["qid"]] = row
    rows = [done[r["qid"]] for r in records if r["qid"] in done]
    n = len(rows)
    new = sum(r["metrics"]["cover_em"] for r in rows)
    old = sum(r["recorded"]["metrics"]["cover_em"] for r in rows)
    same = sum(r["prediction"] == r["recorded"]["prediction"] for r in rows)
    if rows:
        d = paired_difference(
            [r["metrics"]["cover_em"] >= 1 for r in rows], [r["recorded"]["metrics"]["cover_em"] >= 1 for r in rows]
        )
        print(
            f"replayed - recorded: {d.difference:+.1f} [{d.low:+.1f}, {d.high:+.1f}], McNemar p = "
            f"{d.p_value:.2f} ({d.a_only} right only replayed, {d.b_only} only recorded)"
        )
    replayed, recorded = 100 * new / max(n, 1), 100 * old / max(n, 1)
    print(f"{n} questions: cover-EM replayed ({args.tracing}) {replayed:.1f}, recorded {recorded:.1f}")
    print(f"same answer as recorded: {same} of {n}")


if __name__ == "__main__":
    main()
