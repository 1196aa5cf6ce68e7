"""Which recorded SearChain pairs a new θ could decide otherwise, and the eval's rerun of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from searchain_graph.evaluation.harness import read_records, run_evaluation, without_text
from searchain_graph.evaluation.threshold_changes import check_scores, decided_otherwise, recorded_checks, stale_at
from tests.fakes import ScriptedReader, retriever
from tests.unit_tests.test_evaluation import CONFIDENT, chain_llm, example


def check(action: str, f: float | None, theta: float = 4.26) -> dict[str, Any]:
    return {"action": action, "confidence": f, "threshold": theta}


def test_only_an_f_between_the_two_thresholds_decides_otherwise() -> None:
    assert decided_otherwise(check("correction", 4.30), 4.36)  # now f <= θ: it would pass
    assert not decided_otherwise(check("correction", 4.40), 4.36)
    assert decided_otherwise(check("pass", 4.30, theta=4.36), 4.26)  # passed under θ, now above it
    assert not decided_otherwise(check("pass", 4.40), 4.36)  # passed above θ (g in the answer): still does
    assert not decided_otherwise(check("pass", 4.00), 4.36)
    assert not decided_otherwise(check("completion", 4.30), 4.36)  # completions never depend on θ
    assert not decided_otherwise(check("duplicate", None), 4.36)


def test_a_record_is_stale_only_for_searchain_graphs_and_unknown_checks_count_as_stale() -> None:
    tree = {"tree": [{"round": 1, "nodes": [], "checks": [check("pass", 4.0), check("correction", 4.30)]}]}
    record = {"method": "searchain", "tree": tree}
    assert stale_at(record, 4.36) and not stale_at(record, 4.20)
    assert stale_at({"method": "searchain_no_completion", "tree": tree}, 4.36)
    assert not stale_at({"method": "ircot", "tree": tree}, 4.36)  # IRCoT has no θ
    assert stale_at({"method": "searchain", "metrics": {}}, 4.36)  # no checks kept: cannot tell
    assert not stale_at({"method": "searchain", "checks": []}, 4.36)
    assert check_scores(record) == [check("pass", 4.0), check("correction", 4.30)]


def test_eval_runs_again_only_the_pairs_a_new_theta_would_change(tmp_path: Path) -> None:
    class Reader(ScriptedReader):
        default_threshold: float | None = None

    reader = Reader(CONFIDENT)
    out = tmp_path / "results.jsonl"
    kwargs: dict[str, Any] = {"llm": chain_llm(), "retriever": retriever(), "reader": reader, "out_path": out}
    run_evaluation([example("q1")], ["searchain", "cot"], **kwargs)  # θ = the paper's 1.5
    first = {r["method"]: r for r in read_records(out)}
    scores = check_scores(first["searchain"])
    corrections = [c["confidence"] for c in scores if c["action"] == "correction"]
    assert corrections and all(c["threshold"] == 1.5 for c in scores if c["confidence"] is not None)
    # the bare record keeps the checks' numbers and actions, not their text
    assert without_text(first["searchain"])["checks"] == scores

    reader.default_threshold = min(corrections) - 0.5  # below every f that acted: nothing changes
    same = run_evaluation([example("q1")], ["searchain", "cot"], rerun_threshold=True, **kwargs)
    assert (same.ran, same.skipped) == (0, 2)

    reader.default_threshold = max(corrections) + 0.5  # above a correction's f: it would now pass
    again = run_evaluation([example("q1")], ["searchain", "cot"], rerun_threshold=True, **kwargs)
    assert (again.ran, again.skipped) == (1, 1)
    lines = read_records(out)
    assert len(lines) == 3 and lines[-1]["method"] == "searchain"  # the old record stays, superseded
    rerun = check_scores(lines[-1])
    assert all(c["threshold"] == reader.default_threshold for c in rerun if c["confidence"] is not None)
    assert [r["method"] for r in again.records].count("searchain") == 1 and lines[-1] in again.records


def test_cli_rerun_threshold_runs_a_record_that_kept_no_checks(tmp_path: Path) -> None:
    """``searchain eval --rerun-threshold``: at the same θ nothing runs again, but a SearChain record
    that kept no checks (written without text before they were kept) cannot tell, and runs again."""
    from searchain_graph.cli import main
    from tests.fakes import write_hotpot_file

    data = write_hotpot_file(tmp_path / "one.jsonl", "x")
    out = tmp_path / "results.jsonl"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "searchain,direct_retrieval"]
    args += ["--out", str(out), "--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--quiet"]
    assert main(args) == 0
    assert main([*args, "--rerun-threshold"]) == 0
    assert len(read_records(out)) == 2  # the same θ decides every check the same
    bare = [{k: v for k, v in r.items() if k not in ("tree", "checks")} for r in read_records(out)]
    out.write_text("".join(json.dumps(r) + "\n" for r in bare), encoding="utf-8")
    assert main([*args, "--rerun-threshold"]) == 0
    lines = read_records(out)
    assert [r["method"] for r in lines[2:]] == ["searchain"] and recorded_checks(lines[-1]) is not None
