"""The evaluation harness, the report and the oracle-chain benchmark, with fakes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from searchain_graph import ReaderOutput
from searchain_graph.evaluation import harness
from searchain_graph.evaluation.cpu_meter import contended
from searchain_graph.evaluation.datasets import Example
from searchain_graph.evaluation.harness import METHODS, parse_methods, read_records, run_evaluation
from searchain_graph.evaluation.oracle import build_oracle_nodes, matches, read_oracle_nodes, render_sweep, sweep
from searchain_graph.evaluation.report import render_report, write_report
from searchain_graph.method.graph import reader_settings
from tests.fakes import (
    CHAIN_FIXED,
    CHAIN_WRONG,
    PASSAGES,
    QUESTION,
    RuleChatModel,
    ScriptedReader,
    retriever,
    tracing_reply,
    write_hotpot_file,
)

CONFIDENT = {
    "performer": ReaderOutput("Kevin Drew", 4.0),
    "born": ReaderOutput("Toronto", 3.0),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 3.0),
}


def example(qid: str = "q1", answers: Sequence[str] = ("Toronto Coach Terminal",), hops: int = 3) -> Example:
    return {
        "qid": qid,
        "dataset": "hotpotqa",
        "question": QUESTION,
        "answers": list(answers),
        "task": "multihop",
        "hops": hops,
        "paragraphs": [],
        "decomposition": None,
        "meta": {},
    }


def chain_llm() -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        traced = tracing_reply(messages)
        if traced is not None:
            return traced
        return CHAIN_FIXED if "should be" in messages[-1].text else CHAIN_WRONG

    return RuleChatModel(respond=respond)


def test_parse_methods() -> None:
    assert parse_methods("all") == list(METHODS)
    assert parse_methods("searchain, ircot,searchain") == ["searchain", "ircot"]
    with pytest.raises(ValueError, match="unknown method"):
        parse_methods("searchain,magic")


def test_records_resume_and_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "results.jsonl"
    methods = ["searchain", "searchain_no_verification"]
    seen: list[dict[str, Any]] = []
    llm = chain_llm()
    summary = run_evaluation(
        [example("q1"), example("q2", answers=("Montreal",))],
        methods,
        llm=llm,
        retriever=retriever(),
        reader=ScriptedReader(CONFIDENT),
        out_path=out,
        progress=seen.append,
        extra={"model": "rule"},
    )
    assert (summary.ran, summary.skipped, summary.errors) == (4, 0, 0) and len(seen) == 4
    records = {(r["qid"], r["method"]): r for r in read_records(out)}
    full = records[("q1", "searchain")]
    assert full["prediction"] == "Toronto Coach Terminal" and full["metrics"]["cover_em"] == 1.0
    assert full["sources"] == ["llm", "corrected", "llm"] and full["rounds"] == 2 and full["steps"] == 3
    assert full["usage"]["llm_calls"] == 3 and full["model"] == "rule" and full["hops"] == 3
    if Path("/proc/stat").is_file():  # what this process and the others took while the pair ran
        assert set(full["cpu"]) == {"own_seconds", "others_seconds"} and full["cpu"]["own_seconds"] >= 0
    ablated = records[("q1", "searchain_no_verification")]
    assert ablated["sources"] == ["llm", "llm", "llm"] and ablated["rounds"] == 1
    # A rerun skips everything already recorded.
    calls = len(llm.calls)
    again = run_evaluation(
        [example("q1"), example("q2")],
        methods,
        llm=llm,
        retriever=retriever(),
        reader=ScriptedReader(CONFIDENT),
        out_path=out,
    )
    assert (again.ran, again.skipped) == (0, 4) and len(llm.calls) == calls and len(again.records) == 4
    report = render_report(again.records)
    assert "## Table 1" in report and "| searchain | 50.0" in report and "*56.91*" in report
    assert "## Table 2" in report and "corrected by IR" in report
    assert "## Table 5" in report and "SKC" in report
    # A run of one method on one question returns that pair's record, and every method's records of
    # that question for its report, from a single read of the file.
    reads: list[Path] = []

    def counted(path: str | Path) -> list[dict[str, Any]]:
        reads.append(Path(path))
        return read_records(path)

    monkeypatch.setattr(harness, "read_records", counted)
    one = run_evaluation(
        [example("q1")], methods[:1], llm=llm, retriever=retriever(), reader=ScriptedReader(CONFIDENT), out_path=out
    )
    assert [(r["qid"], r["method"]) for r in one.records] == [("q1", "searchain")]
    assert sorted((r["qid"], r["method"]) for r in one.question_records) == [("q1", m) for m in sorted(methods)]
    assert reads == [out]  # read to resume; the summary adds the run's own records to that read
    assert one.question_records == [r for r in again.records if r["qid"] == "q1"]


def test_records_without_the_datasets_text_resume_and_report(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    kwargs: dict[str, Any] = {"llm": chain_llm(), "retriever": retriever(), "reader": ScriptedReader(CONFIDENT)}
    gold = [{"title": "Kevin Drew", "text": PASSAGES[1].page_content, "is_supporting": True}]  # the corrected node's
    questions = [{**example("q1"), "paragraphs": gold}, example("q2", answers=("Montreal",))]
    first = run_evaluation(questions, ["searchain", "cot"], out_path=out, keep_text=False, **kwargs)
    assert (first.ran, first.errors) == (4, 0)
    assert QUESTION not in out.read_text(encoding="utf-8")  # nor any other field that quotes the dataset
    records = {(r["qid"], r["method"]): r for r in read_records(out)}
    assert not any(set(harness.TEXT_FIELDS) & set(r) for r in records.values())
    searchain = records[("q1", "searchain")]
    assert searchain["prediction"] == "Toronto Coach Terminal" and searchain["metrics"]["cover_em"] == 1.0
    assert searchain["sources"] == ["llm", "corrected", "llm"]
    assert searchain["node_verdicts"] == {"supporting paragraphs": ["helps"]}  # judged while the gold was at hand
    # A resumed run reads these records as done, whether or not it keeps the text.
    again = run_evaluation(questions, ["searchain", "cot"], out_path=out, **kwargs)
    assert (again.ran, again.skipped) == (0, 4)
    report = render_report(again.records)
    assert "| searchain | 50.0" in report and "| hotpotqa | supporting paragraphs | 1 | 1 (100.0%)" in report


def _sections(report: str, leave_out: Sequence[str]) -> list[str]:
    return [part for part in report.split("\n## ") if not part.startswith(tuple(leave_out))]


def test_a_report_reads_the_same_from_records_without_text(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    kwargs: dict[str, Any] = {"llm": chain_llm(), "retriever": retriever(), "reader": ScriptedReader(CONFIDENT)}
    gold = [{"title": "Kevin Drew", "text": PASSAGES[1].page_content, "is_supporting": True}]
    questions = [{**example(q), "paragraphs": gold} for q in ("q1", "q2")]
    questions.append({**example("q3", answers=("Montreal",)), "paragraphs": gold})
    run_evaluation(questions, ["searchain", "searchain_no_ir", "cot", "ircot"], out_path=out, **kwargs)
    records = read_records(out)
    repaired = "a loop; the chain ends at node 2"
    records[0] = {**records[0], "warnings": [repaired, repaired]}  # what the report counts off the warnings
    bare = [harness.without_text(r) for r in records]
    assert bare[0]["repairs"] == {"loop ended": 2}
    assert any("where_lost" in r for r in bare) and all("restated" in r for r in bare)
    full, shared = render_report(records), render_report(bare)
    by_round = ("Each question's Tree-of-Reasoning", "The reader's f", "Corrections the LLM took back")
    assert "Where SearChain's wrong answers lost" in full and "Chain repairs" in full
    assert _sections(shared, by_round) == _sections(full, by_round)  # every other section, figure for figure


def test_the_report_links_each_questions_tree(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    run_evaluation(
        [example("q1"), example("q/2", answers=("Montreal",))],
        ["searchain", "cot"],
        llm=chain_llm(),
        retriever=retriever(),
        reader=ScriptedReader(CONFIDENT),
        out_path=out,
    )
    records = read_records(out)
    assert all(("tree" in r) == (r["method"] == "searchain") for r in records)  # CoT has no tree
    paths = write_report(records, tmp_path / "rep")
    report = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "## Each question's Tree-of-Reasoning" in report
    links = re.findall(r"\[tree\]\(([^)]+)\)", report)
    assert sorted(links) == ["trees/hotpotqa/searchain/q1.md", "trees/hotpotqa/searchain/q_2.md"]
    for link in links:
        page = (tmp_path / "rep" / link).read_text(encoding="utf-8")
        assert tmp_path / "rep" / link in paths
        assert page.startswith(f"### {QUESTION}")
        assert "**Round 2** · from round 1, node 2 (correction)" in page and "[[1]](#ref-1)" in page


def test_errors_are_recorded_and_retried(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"

    def broken(messages: Sequence[BaseMessage]) -> str:
        raise RuntimeError("the LLM is down")

    summary = run_evaluation(
        [example()],
        ["searchain"],
        llm=RuleChatModel(respond=broken),
        retriever=retriever(),
        reader=ScriptedReader(CONFIDENT),
        out_path=out,
    )
    assert summary.errors == 1 and "the LLM is down" in read_records(out)[0]["error"]
    # The rerun retries the errored pair, and the report keeps the good record.
    summary = run_evaluation(
        [example()],
        ["searchain"],
        llm=chain_llm(),
        retriever=retriever(),
        reader=ScriptedReader(CONFIDENT),
        out_path=out,
        concurrency=2,
    )
    assert summary.ran == 1 and summary.errors == 0 and len(summary.records) == 1
    assert summary.records[0]["error"] is None


def test_torn_last_line_is_ignored_and_bad_lines_named(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    out.write_text(json.dumps({"qid": "a", "method": "cot"}) + "\n" + '{"qid": "b", "meth')
    with pytest.warns(UserWarning, match=r"r.jsonl:2: torn last line ignored"):
        assert [r["qid"] for r in read_records(out)] == ["a"]
    out.write_text('{"qid": \n' + json.dumps({"qid": "a", "method": "cot"}) + "\n")
    with pytest.raises(ValueError, match=r"r.jsonl:1: not a results record"):
        read_records(out)


def _killed_mid_write(out: Path) -> None:
    with out.open("a", encoding="utf-8") as handle:
        handle.write('{"qid": "q1", "method": "sear')


def _killed_before_the_newline(out: Path) -> None:
    out.write_bytes(out.read_bytes().rstrip(b"\n"))  # the record is whole


@pytest.mark.parametrize("kill", [_killed_mid_write, _killed_before_the_newline])
def test_a_rerun_after_a_kill_appends_cleanly_and_keeps_every_whole_record(
    tmp_path: Path, kill: Callable[[Path], None]
) -> None:
    """A torn record's pair runs again; a whole record missing only its newline is kept, not run again."""
    out = tmp_path / "results.jsonl"
    kwargs: dict[str, Any] = {
        "llm": chain_llm(),
        "retriever": retriever(),
        "reader": ScriptedReader(CONFIDENT),
        "out_path": out,
    }
    run_evaluation([example()], ["searchain"], **kwargs)
    kill(out)
    summary = run_evaluation([example()], ["searchain", "searchain_no_ir"], **kwargs)
    assert (summary.ran, summary.skipped) == (1, 1)
    assert out.read_bytes().count(b"\n") == 2 and out.read_bytes().endswith(b"\n")
    assert [r["method"] for r in read_records(out)] == ["searchain", "searchain_no_ir"]


def test_a_last_line_torn_inside_a_utf8_character_is_ignored(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    whole = json.dumps({"qid": "a", "method": "cot"}).encode() + b"\n"
    torn = '{"qid": "b", "question": "Zü'.encode()[:-1]  # cut inside the two bytes of "ü"
    out.write_bytes(whole + torn)
    with pytest.warns(UserWarning, match=r"r.jsonl:2: torn last line ignored \(not UTF-8\)"):
        assert [r["qid"] for r in read_records(out)] == ["a"]
    out.write_bytes(b'{"qid": "\xc3"}\n' + whole)  # not at the end: an error naming the line
    with pytest.raises(ValueError, match=r"r.jsonl:1: not a results record \(not UTF-8\)"):
        read_records(out)


def test_cli_eval_and_report_read_an_interrupted_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from searchain_graph.cli import main

    data = write_hotpot_file(tmp_path / "hotpot.jsonl", "t1")
    out, report = tmp_path / "results.jsonl", tmp_path / "report"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--out", str(out), "--report", str(report)]
    args += ["--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--methods", "cot", "--quiet"]
    assert main(args) == 0
    out.write_bytes(out.read_bytes().rstrip(b"\n"))  # the last record whole, its newline lost
    assert main(args) == 0
    assert "0 run(s), 1 already" in capsys.readouterr().out
    with out.open("ab") as handle:
        handle.write(b'\n{"qid": "t1", "question": "Z\xc3')  # a write cut inside "ü"
    with pytest.warns(UserWarning, match="torn last line ignored"):
        assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "report.md").is_file()


def test_report_tables_three_and_four(tmp_path: Path) -> None:
    def record(qid: str, method: str, correct: bool, sources: list[str] | None = None, hops: int = 2) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "qid": qid,
            "dataset": "musique",
            "method": method,
            "hops": hops,
            "steps": 3 if method == "cot" else 5,
            "metrics": {"cover_em": float(correct), "em": float(correct), "f1": float(correct)},
            "usage": {"words_in": 100, "words_out": 20, "llm_calls": 2},
            "rounds": 1,
            "seconds": 1.0,
            "error": None,
        }
        if sources is not None:
            rec["sources"], rec["cited"] = sources, 2
        return rec

    records = [
        record("1", "searchain", True, ["llm", "corrected"]),
        record("1", "searchain_no_ir", False),
        record("2", "searchain", False, ["llm", "llm"], hops=3),
        record("2", "searchain_no_ir", True, hops=3),
        record("3", "searchain", True, ["completed", "llm"]),
        record("3", "searchain_no_ir", True),
        record("1", "cot", False),
    ]
    report = render_report(records)
    # S = 3 questions, no-IR correct on 2; S_IR = {1, 3}: no-IR 50%, with IR 100%; S_t = {2, 3}: SearChain
    # gets 2 wrong, though IR touched none of its nodes (0 of 1).
    assert "| musique | 66.7 *13.61* | 50.0 *10.2* | 100.0 *18.49* | 2 | 50.0 *6.5* | 2 | 0 of 1 |" in report
    assert "| cot | 3.00 *2.25* | – *2.23* |" in report
    assert "| musique | 6 | 66.7 *78.83* | 16.7 *14.6* | 16.7 *6.57* |" in report
    assert "running at once" not in report
    assert "with 8 pair(s) running at once" in render_report([{**r, "concurrency": 8} for r in records])
    paths = write_report(records, tmp_path / "rep")
    assert paths[0].read_text().startswith("# SearChain evaluation")
    assert {p.name for p in paths[1:]} <= {"accuracy.png", "accuracy_vs_words.png"}


def _musique_like() -> list[Example]:
    base = example()
    steps = [
        ("Who is the performer of Spirit If...?", "Kevin Drew"),
        ("Where was Kevin Drew born?", "Toronto"),
        ("Where do greyhound buses leave from in Toronto?", "Toronto Coach Terminal"),
    ]
    out = []
    for n in range(4):
        ex = dict(base)
        ex["qid"] = f"m{n}"
        ex["decomposition"] = [{"question": q, "answer": a} for q, a in steps]
        out.append(ex)  # type: ignore[arg-type]
    return out  # type: ignore[return-value]


def test_oracle_chain_sweep() -> None:
    nodes = build_oracle_nodes(_musique_like(), wrong_fraction=0.4, unsolved_fraction=0.3, seed=1)
    assert len(nodes) == 12 and {n["condition"] for n in nodes} == {"correct", "wrong", "unsolved"}
    assert all(not matches(n["answer"], n["gold"]) for n in nodes if n["condition"] == "wrong")
    read_oracle_nodes(nodes, retriever(), ScriptedReader(CONFIDENT))
    assert all(n["hit"] for n in nodes)
    rows = sweep(nodes, [0.0, 3.5, 5.0], settings=reader_settings(ScriptedReader(CONFIDENT))[0])
    low, mid, high = rows
    # The scripted reader is right with f = 3 or 4: below θ every wrong node is repaired, above none.
    assert low["wrong_repaired"] == 1.0 and low["correct_broken"] == 0.0
    assert high["wrong_repaired"] == 0.0 and high["wrong_missed"] == 1.0
    assert 0.0 < mid["wrong_repaired"] < 1.0
    assert low["unsolved_completed"] == high["unsolved_completed"] == 1.0
    table = render_sweep(rows, nodes, reader_name="scripted")
    assert "| 0 | 100.0% |" in table and "Top-1 passage holds the gold sub-answer for 100.0%" in table
    with pytest.raises(ValueError, match="no example has a gold decomposition"):
        build_oracle_nodes([example()])
    with pytest.raises(ValueError, match="sum to at most 1"):
        build_oracle_nodes(_musique_like(), wrong_fraction=0.8, unsolved_fraction=0.5)


def test_cli_eval_writes_records_and_a_report(
    tmp_path: Path, tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from searchain_graph.cli import main

    data = tmp_path / "hotpot.jsonl"
    rows = [
        {
            "question_id": f"h{n}",
            "question_text": QUESTION,
            "answers_objects": [{"spans": ["Toronto Coach Terminal"]}],
            "contexts": [
                {"title": d.metadata["title"], "paragraph_text": d.page_content, "is_supporting": n == 0}
                for d in PASSAGES
            ],
        }
        for n in range(3)
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "results.jsonl"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "searchain,cot,ircot"]
    args += ["--limit", "2", "--model", str(tiny_llm_dir), "--max-new-tokens", "8", "--out", str(out), "--quiet"]
    assert main(args) == 0
    records = read_records(out)
    assert len(records) == 6 and {r["method"] for r in records} == {"searchain", "cot", "ircot"}
    assert all(r["error"] is None and "cover_em" in r["metrics"] for r in records)
    assert {r["max_new_tokens"] for r in records} == {8}  # the budget a call, for the report's cut replies
    assert "6 run(s), 0 already" in capsys.readouterr().out
    assert (tmp_path / "results-report" / "report.md").is_file()
    assert main(args) == 0  # resumes: nothing left to run
    assert "0 run(s), 6 already" in capsys.readouterr().out
    batched = [a if a != "2" else "3" for a in args] + ["--batch-size", "3"]  # the third question, batched
    assert main(batched) == 0
    printed = capsys.readouterr().out
    assert "3 run(s), 6 already" in printed
    assert "prefix cache" not in printed  # torch has no decoder of its own, so no engine counters to print
    records = read_records(out)
    assert [r.get("concurrency") for r in records] == [1] * 6 + [3] * 3
    assert all(r["error"] is None for r in records)
    assert main(["report", str(out), "--out", str(tmp_path / "rep")]) == 0
    assert (tmp_path / "rep" / "report.md").read_text().startswith("# SearChain evaluation")
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--data", f"hotpotqa={data}"]) == 0
    assert main(["report", str(out), "--out", str(tmp_path / "rep"), "--data", str(data)]) == 2
    assert f"--data takes DATASET=FILE (e.g. musique=dev.jsonl), got '{data}'" in capsys.readouterr().err
    assert main(["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "nope", "--quiet"]) == 2
    assert "unknown method(s) nope" in capsys.readouterr().err


def test_cli_eval_exits_non_zero_when_every_run_failed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from searchain_graph.cli import main

    data = write_hotpot_file(tmp_path / "hotpot.jsonl", "b1")
    out = tmp_path / "broken.jsonl"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "cot,direct", "--out", str(out)]
    assert main([*args, "--model", "import:tests.fakes:broken_llm", "--reader", "llm", "--quiet"]) == 1
    assert "every one of the 2 run(s) failed" in capsys.readouterr().err
    assert [r["error"] for r in read_records(out)] == ["ValueError: this LLM always fails"] * 2
    assert main([*args, "--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--quiet"]) == 0  # retried
    assert "2 run(s), 0 already" in capsys.readouterr().out


def test_cli_eval_reports_every_method_the_file_holds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A second eval that adds a method to a results file reports the first eval's methods too (on
    the run's questions), so adding a method never leaves the report with only the new one."""
    from searchain_graph.cli import main

    data = write_hotpot_file(tmp_path / "hotpot.jsonl", "r1")
    out, report = tmp_path / "results.jsonl", tmp_path / "report"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--out", str(out), "--report", str(report)]
    args += ["--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--quiet"]
    assert main([*args, "--methods", "cot"]) == 0
    assert main([*args, "--methods", "direct"]) == 0
    assert "1 run(s), 0 already" in capsys.readouterr().out  # the second eval ran only its own method
    text = (report / "report.md").read_text(encoding="utf-8")
    assert "| cot |" in text and "| direct |" in text, text
    # Each record names what computed it, and the report says it once per set of versions.
    versions = [r["versions"] for r in read_records(out)]
    assert versions[0] == versions[1] and versions[0]["langgraph"] and "searchain-graph" in versions[0]
    assert "Ran on: " in text and "(2 records)" in text


def test_the_report_names_each_set_of_versions_and_the_records_without() -> None:
    from searchain_graph.evaluation.report import versions_line

    old = {"qid": "a"}
    new = {"qid": "b", "versions": {"onnxruntime": "1.32.0", "torch": "2.13.0"}}
    other = {"qid": "c", "versions": {"onnxruntime": "1.31.0", "torch": "2.13.0"}}
    assert versions_line([old]) == ""
    line = versions_line([old, new, new, other])
    assert line.startswith("Ran on: onnxruntime 1.32.0, torch 2.13.0 (2 records); onnxruntime 1.31.0")
    assert line.endswith("(1 record); 1 record written before versions were kept.")


def test_cli_eval_skips_questions_but_keeps_their_paragraphs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--skip 1 --limit 1`` runs the second question only, over the corpus of all three (dev questions
    taken after the evaluation's, with the evaluation's corpus)."""
    from searchain_graph.cli import commands, main

    corpora: list[int] = []
    load_stack = commands.load_stack

    def counting(args: Any, **kwargs: Any) -> Any:
        corpora.append(len(kwargs["documents"]))
        return load_stack(args, **kwargs)

    monkeypatch.setattr(commands, "load_stack", counting)

    one = json.loads(write_hotpot_file(tmp_path / "one.jsonl", "x").read_text())
    # Each question brings one paragraph of its own; the skipped question's is the one the second needs.
    rows = []
    for n, qid in enumerate(["d1", "d2", "d3"]):
        row = {**one, "question_id": qid, "contexts": [one["contexts"][n]]}
        rows.append(row)
    data = tmp_path / "three.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "skipped.jsonl"
    args = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "direct_retrieval", "--out", str(out)]
    args += ["--model", "import:tests.fakes:serve_llm", "--reader", "llm", "--quiet"]
    assert main([*args, "--skip", "1", "--limit", "1"]) == 0
    assert corpora == [3]  # the skipped questions' paragraphs too
    assert [r["qid"] for r in read_records(out)] == ["d2"]
    # --without-text: the next question's record keeps its scores, not the dataset's words
    assert main([*args, "--skip", "2", "--without-text"]) == 0
    bare = read_records(out)[-1]
    assert bare["qid"] == "d3" and "metrics" in bare and not set(harness.TEXT_FIELDS) & set(bare)
    with pytest.raises(SystemExit) as refused:
        main([*args, "--skip", "-1", "--quiet"])
    assert refused.value.code == 2
    assert "argument --skip: must be at least 0, got -1" in capsys.readouterr().err


def test_pairs_timed_beside_other_work_can_be_run_again(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    kwargs: dict[str, Any] = {"llm": chain_llm(), "retriever": retriever(), "reader": ScriptedReader(CONFIDENT)}
    run_evaluation([example("q1"), example("q2")], ["cot"], out_path=out, **kwargs)
    first = read_records(out)
    busy = {**first[0], "seconds": 10.0, "cpu": {"own_seconds": 20.0, "others_seconds": 9.0}}
    quiet = {**first[1], "seconds": 10.0, "cpu": {"own_seconds": 20.0, "others_seconds": 0.1}}
    out.write_text("".join(json.dumps(r) + "\n" for r in [busy, quiet]), encoding="utf-8")
    kept = run_evaluation([example("q1"), example("q2")], ["cot"], out_path=out, **kwargs)
    assert (kept.ran, kept.skipped) == (0, 2)  # by default a record stands
    again = run_evaluation([example("q1"), example("q2")], ["cot"], out_path=out, rerun_contended=True, **kwargs)
    assert (again.ran, again.skipped) == (1, 1)
    lines = read_records(out)
    assert len(lines) == 3 and lines[0] == busy and lines[2]["qid"] == busy["qid"]  # the old record stays
    # ... and the summary (which the eval's report is drawn from) holds the rerun's record, not it.
    assert sorted(map(json.dumps, again.records)) == sorted(map(json.dumps, lines[1:]))
    assert "beside other work" in render_report([busy, quiet])
    assert "beside other work" not in render_report(lines) or contended(lines[-1])  # this machine may be busy


def test_report_sets_two_settings_of_one_method_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``searchain report fresh.jsonl path=other.jsonl``: the second file's methods as ``method@path``."""
    from searchain_graph.cli import main

    fresh, other = tmp_path / "fresh.jsonl", tmp_path / "other.jsonl"
    kwargs: dict[str, Any] = {"llm": chain_llm(), "retriever": retriever(), "reader": ScriptedReader(CONFIDENT)}
    run_evaluation([example("q1"), example("q2")], ["searchain"], out_path=fresh, **kwargs)
    run_evaluation([example("q1"), example("q2")], ["searchain"], out_path=other, **kwargs)
    out = tmp_path / "rep"
    assert main(["report", str(fresh), f"path={other}", "--out", str(out)]) == 0
    report = (out / "report.md").read_text()
    assert "| searchain@path |" in report  # Table 1's row for the labelled file
    assert "| searchain@path | 2 | +0.0 |" in report.replace("| hotpotqa ", "")  # paired against searchain
    capsys.readouterr()
    for bad in (f"={other}", f"a@b={other}", f"path={tmp_path / 'missing.jsonl'}"):
        assert main(["report", str(fresh), bad, "--out", str(out)]) == 2
        assert "a results argument is FILE or LABEL=FILE" in capsys.readouterr().err
