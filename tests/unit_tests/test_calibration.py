"""θ from data: the rule, the saved choice, its pick-up by the graph, and ``searchain calibrate``."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from searchain_graph import DPRReader, ExtractiveQAReader, LLMReader, ReaderOutput, _files, create_searchain_graph
from searchain_graph.cli import main
from searchain_graph.evaluation.calibration import choose_threshold, rule_text, threshold_grid
from searchain_graph.ir.readers import calibration as store
from searchain_graph.ir.readers.calibration import (
    calibration_path,
    chat_model_name,
    load_calibration,
    reader_key,
    save_threshold,
    saved_threshold,
)
from tests.fakes import CHAIN_FIXED, CHAIN_WRONG, PASSAGES, QUESTION, RuleChatModel, ScriptedReader, retriever


def row(theta: float, repaired: float, broken: float, completed: float = 0.5) -> dict[str, Any]:
    return {"theta": theta, "wrong_repaired": repaired, "correct_broken": broken, "unsolved_completed": completed}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


# -- the rule ---------------------------------------------------------------------------------------


def test_rule_most_repaired_within_the_bound() -> None:
    rows = [row(0.0, 0.6, 0.30), row(1.0, 0.5, 0.10), row(2.0, 0.4, 0.05), row(3.0, 0.2, 0.01), row(5.0, 0.0, 0.0)]
    choice = choose_threshold(rows)
    assert (choice.threshold, choice.row, choice.qualified) == (2.0, 2, True)
    assert "repairs the most wrong nodes (40.0%)" in choice.reason
    assert choose_threshold(rows, max_broken=0.1).threshold == 1.0
    assert choose_threshold(rows, max_broken=0.0).threshold == 5.0
    assert "at most 5%" in rule_text(0.05)


def test_rule_ties_go_to_more_completed_then_higher_theta() -> None:
    rows = [row(1.0, 0.4, 0.0, completed=0.2), row(2.0, 0.4, 0.0, completed=0.3), row(3.0, 0.4, 0.0, completed=0.3)]
    assert choose_threshold(rows).threshold == 3.0
    rows[2]["unsolved_completed"] = 0.1
    assert choose_threshold(rows).threshold == 2.0
    flat = [row(t, 0.0, 0.0) for t in (-1.0, 1.5, 4.0)]
    assert choose_threshold(flat).threshold == 4.0  # nothing repairs: the highest θ, verification off


def test_rule_when_nothing_qualifies_takes_the_fewest_broken() -> None:
    rows = [row(0.0, 0.5, 0.40), row(1.0, 0.3, 0.20), row(2.0, 0.2, 0.20), row(3.0, 0.1, 0.30)]
    choice = choose_threshold(rows)
    assert (choice.threshold, choice.qualified) == (1.0, False)  # tie at 20% broken: the one repairing more
    assert choice.reason.startswith("no θ breaks at most 5% of correct nodes")


def test_rule_on_an_empty_table_or_a_bad_bound() -> None:
    with pytest.raises(ValueError, match="no rows"):
        choose_threshold([])
    with pytest.raises(ValueError, match="max_broken"):
        choose_threshold([row(1.0, 0.0, 0.0)], max_broken=1.5)


def test_grid_follows_the_observed_confidences() -> None:
    grid = threshold_grid([None, -3.0, 0.25, 0.5, 8.0])
    assert grid[0] == -3.0 and grid[-1] == 8.0 and 1.5 in grid
    assert grid == sorted(set(grid)) and len(grid) > 5
    assert threshold_grid([None]) == [1.5]


# -- the saved choice -------------------------------------------------------------------------------


class KeyedReader(ScriptedReader):
    calibration_key = "scripted:v1"
    default_threshold = 2.0


def test_keys_name_the_reader_and_its_model() -> None:
    llm = RuleChatModel(respond=lambda messages: "x")
    assert LLMReader(llm).calibration_key == "llm:RuleChatModel"
    assert chat_model_name(SimpleNamespace(model_name="SmolLM2", backend="onnx-int4")) == "SmolLM2@onnx-int4"
    assert chat_model_name(SimpleNamespace(model_name="SmolLM2", backend="torch")) == "SmolLM2"
    assert chat_model_name(SimpleNamespace(model="gpt-4o-mini")) == "gpt-4o-mini"
    assert DPRReader("/models/dpr").calibration_key == "dpr:/models/dpr"
    assert ExtractiveQAReader("deepset/roberta-base-squad2").calibration_key == "extractive:deepset/roberta-base-squad2"
    assert reader_key(ScriptedReader({})) == "ScriptedReader"
    assert reader_key(KeyedReader({})) == "scripted:v1"
    assert calibration_path("dpr:/models/dpr") != calibration_path("dpr:/models/dpr2")


def test_save_and_load_round_trip(cache: Path) -> None:
    reader = KeyedReader({})
    assert saved_threshold(reader) is None
    path = save_threshold(reader, 2.25, details={"rule": "r", "counts": {"nodes": 3}})
    assert path.parent == cache / "calibration" and path.suffix == ".json"
    assert saved_threshold(reader) == 2.25
    record = load_calibration("scripted:v1")
    assert record is not None and record["counts"] == {"nodes": 3} and record["key"] == "scripted:v1"
    assert saved_threshold(ScriptedReader({})) is None  # another key
    elsewhere = save_threshold(reader, -1.0, directory=cache / "mine")
    assert saved_threshold(reader, directory=cache / "mine") == -1.0 and elsewhere.parent == cache / "mine"
    assert saved_threshold(reader) == 2.25
    with pytest.raises(ValueError, match="finite"):
        save_threshold(reader, float("nan"))


def test_unusable_files_are_ignored(cache: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = calibration_path("scripted:v1")
    path.parent.mkdir(parents=True)
    path.write_text("{not json", encoding="utf-8")
    with caplog.at_level(logging.WARNING):
        assert saved_threshold("scripted:v1") is None
    assert "ignoring the saved calibration" in caplog.text
    path.write_text(json.dumps({"format": 1, "key": "other", "threshold": 1.0}), encoding="utf-8")
    assert saved_threshold("scripted:v1") is None


def test_a_failed_write_leaves_the_old_file_and_no_partial_one(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = save_threshold("scripted:v1", 1.0)

    def broken_replace(src: str, dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(_files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="disk full"):
        save_threshold("scripted:v1", 9.0)
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert saved_threshold("scripted:v1") == 1.0
    with pytest.raises(TypeError):
        save_threshold("scripted:v2", 1.0, details={"bad": object()})
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


# -- the graph picks it up --------------------------------------------------------------------------

CONFIDENT = {
    "performer": ReaderOutput("Kevin Drew", 4.0),
    "born": ReaderOutput("Toronto", 3.0),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 2.5),
}


def correcting_llm() -> RuleChatModel:
    def respond(messages: Any) -> str:
        text = messages[-1].text
        if text.startswith("You can try to generate the final answer"):
            return "[Final Content]: Toronto Coach Terminal [1]. So the final answer is Toronto Coach Terminal."
        return CHAIN_FIXED if "should be Toronto" in text else CHAIN_WRONG

    return RuleChatModel(respond=respond)


def test_graph_uses_the_saved_threshold_unless_given_one(caplog: pytest.LogCaptureFixture) -> None:
    reader = KeyedReader(CONFIDENT)
    default = create_searchain_graph(correcting_llm(), retriever(), reader)
    assert default.config["metadata"] == {"searchain_threshold": 2.0, "searchain_threshold_source": "reader default"}
    assert default.invoke({"question": QUESTION})["rounds"] == 2  # f = 3 > 2: corrected

    save_threshold(reader, 3.5)
    with caplog.at_level(logging.INFO, logger="searchain_graph.method.graph"):
        graph = create_searchain_graph(correcting_llm(), retriever(), reader)
    meta = graph.config["metadata"]
    assert meta["searchain_threshold"] == 3.5 and meta["searchain_threshold_source"].startswith("calibration:")
    assert "SearChain θ = 3.5 (calibration:" in caplog.text
    out = graph.invoke({"question": QUESTION})
    assert out["rounds"] == 1 and [r["source"] for r in out["references"]] == ["llm", "llm", "llm"]

    explicit = create_searchain_graph(correcting_llm(), retriever(), reader, confidence_threshold=1.5)
    assert explicit.config["metadata"] == {"searchain_threshold": 1.5, "searchain_threshold_source": "argument"}
    assert explicit.invoke({"question": QUESTION})["rounds"] == 2
    plain = create_searchain_graph(correcting_llm(), retriever(), ScriptedReader(CONFIDENT))
    assert plain.config["metadata"]["searchain_threshold_source"] == "paper default"  # no default_threshold


# -- searchain calibrate ----------------------------------------------------------------------------

STEPS = [
    ("Who is the performer of Spirit If...?", "Kevin Drew"),
    ("Where was #1 born?", "Toronto"),
    ("Where do greyhound buses leave from in #2?", "Toronto Coach Terminal"),
]
MIXED = {  # right with f = 4 and 3; wrong ("Montreal") with f = 2 on the second step
    "performer": ReaderOutput("Kevin Drew", 4.0),
    "born": ReaderOutput("Montreal", 2.0),
    "greyhound": ReaderOutput("Toronto Coach Terminal", 3.0),
}


def musique_file(path: Path, n: int = 6) -> Path:
    paragraphs = [
        {"idx": i, "title": d.metadata["title"], "paragraph_text": d.page_content, "is_supporting": True}
        for i, d in enumerate(PASSAGES)
    ]
    rows = [
        {
            "id": f"3hop1__{k}",
            "question": QUESTION,
            "answer": "Toronto Coach Terminal",
            "answer_aliases": [],
            "paragraphs": paragraphs,
            "question_decomposition": [{"question": q, "answer": a} for q, a in STEPS],
        }
        for k in range(n)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def fake_stack(monkeypatch: pytest.MonkeyPatch) -> KeyedReader:
    reader = KeyedReader(MIXED)
    monkeypatch.setattr("searchain_graph.ir.readers.load.load_reader", lambda spec, llm: reader)
    monkeypatch.setattr(
        "searchain_graph.llms.loading.load_chat_model", lambda *a, **k: RuleChatModel(respond=lambda m: "x")
    )
    return reader


def test_cli_calibrate_prints_the_table_and_saves_the_choice(
    tmp_path: Path, fake_stack: KeyedReader, capsys: pytest.CaptureFixture[str]
) -> None:
    data = musique_file(tmp_path / "dev.jsonl")
    table = tmp_path / "out" / "table.md"
    args = ["calibrate", "--reader", "fake", "--dataset", "musique", "--data", str(data)]
    assert main([*args, "--wrong", "0.4", "--unsolved", "0.2", "--seed", "1", "--out", str(table)]) == 0
    out = capsys.readouterr().out
    assert "| θ | wrong repaired |" in out and out.count("(chosen)") == 1
    # θ < 2 breaks every correct "born" node (g = Montreal); θ >= 3 repairs no wrong "greyhound" node.
    theta = saved_threshold(fake_stack)
    assert theta is not None and 2.0 <= theta < 3.0
    assert f"chosen: θ = {theta:g} for scripted:v1\n" in out and "saved to" in out
    record = load_calibration(fake_stack)
    assert record is not None and record["qualified"] and record["chosen_row"]["theta"] == theta
    assert record["settings"]["dataset"] == "musique" and record["counts"]["nodes"] == 18
    assert table.read_text(encoding="utf-8").count("(chosen)") == 1

    (calibration_path(fake_stack)).unlink()
    assert main([*args, "--no-save", "--limit", "2"]) == 0
    assert "not saved (--no-save)" in capsys.readouterr().out
    assert saved_threshold(fake_stack) is None


def test_cli_calibrate_fails_on_data_without_decompositions(
    tmp_path: Path, fake_stack: KeyedReader, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "hotpot.jsonl"
    record = {
        "question_id": "h1",
        "question_text": QUESTION,
        "answers_objects": [{"spans": ["Toronto Coach Terminal"]}],
        "contexts": [{"title": "T", "paragraph_text": "Some text.", "is_supporting": True}],
    }
    data.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert main(["calibrate", "--dataset", "hotpotqa", "--data", str(data)]) == 2
    assert "no example has a gold decomposition" in capsys.readouterr().err
    assert saved_threshold(fake_stack) is None


def test_a_shipped_calibration_serves_until_the_user_saves_one(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = tmp_path / "shipped"
    monkeypatch.setattr(store, "SHIPPED_CALIBRATIONS", shipped)
    store.save_threshold("scripted:v1", 4.0, directory=shipped)
    assert store.saved_threshold("scripted:v1") == 4.0
    assert store.load_calibration("scripted:v1")["path"].startswith(str(shipped))  # type: ignore[index]
    store.save_threshold("scripted:v1", 0.5)
    assert store.saved_threshold("scripted:v1") == 0.5
