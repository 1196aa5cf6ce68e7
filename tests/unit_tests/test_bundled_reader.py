"""The reader shipped in the package, on its shipped weights: loading, reading, batching, no-answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchain_graph.ir.readers.base import MIN_CONFIDENCE, Passage, ReaderOutput
from searchain_graph.ir.readers.bundled import (
    BUNDLED_READER_DIR,
    DEFAULT_WINDOW,
    BundledReader,
    bundled_threshold,
    trained_window,
)
from searchain_graph.ir.readers.load import load_reader
from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.method.graph import resolve_threshold
from tests.helpers import assert_reads_close

DREW = Passage(
    "Kevin Drew (born September 9, 1976) is a Canadian musician. He was born in Toronto, Ontario.", "Kevin Drew"
)
GREYHOUND = Passage(
    "Greyhound Lines, Inc. is an intercity bus carrier serving over 3,800 destinations in North America. "
    "Its buses in Toronto leave from the Toronto Coach Terminal.",
    "Greyhound Lines",
)
PEAR = Passage("The pear tree is a species of the genus Pyrus. Pears are eaten fresh, canned, or dried.", "Pear")


@pytest.fixture(scope="module")
def reader() -> BundledReader:
    return BundledReader().load()


def test_the_weights_ship_with_the_package_with_a_card_and_a_calibration() -> None:
    names = {p.name for p in BUNDLED_READER_DIR.iterdir()}
    shipped = {"config.json", "model.safetensors", "tokenizer.json", "README.md"}
    assert shipped | {"calibration.json", "calibration-relevance.json"} <= names
    size = sum(p.stat().st_size for p in BUNDLED_READER_DIR.iterdir())
    assert size <= 50 * 1024 * 1024
    calibration = json.loads((BUNDLED_READER_DIR / "calibration.json").read_text(encoding="utf-8"))
    assert calibration["key"].endswith(":joint")
    assert BundledReader.default_threshold == pytest.approx(calibration["threshold"])
    assert bundled_threshold() == pytest.approx(calibration["threshold"])
    relevance = json.loads((BUNDLED_READER_DIR / "calibration-relevance.json").read_text(encoding="utf-8"))
    assert relevance["key"].endswith(":relevance")
    assert BundledReader(confidence="relevance").default_threshold == pytest.approx(relevance["threshold"])


def test_joint_confidence_is_relevance_plus_the_spans_log_probability(reader: BundledReader) -> None:
    paper = BundledReader(confidence="relevance").load()
    assert reader.confidence == "joint"
    assert reader.calibration_key != paper.calibration_key  # a θ belongs to one kind of f
    pairs = [("Where was Kevin Drew born?", DREW), ("Where do Greyhound buses in Toronto leave from?", GREYHOUND)]
    for joint, relevance in zip(reader.read_batch(pairs), paper.read_batch(pairs), strict=True):
        assert joint.answer == relevance.answer
        assert joint.confidence <= relevance.confidence + 1e-4  # a log-probability is at most 0
    with pytest.raises(ValueError, match="confidence must be one of"):
        BundledReader(confidence="margin")  # type: ignore[arg-type]


def test_the_graph_takes_the_shipped_theta_and_names_its_source(
    reader: BundledReader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path))  # no calibration saved by this user
    theta, source = resolve_threshold(reader)
    assert theta == pytest.approx(bundled_threshold())
    assert source == f"calibration shipped with the weights:{BUNDLED_READER_DIR / 'calibration.json'}"


def test_loads_by_spec_offline(reader: BundledReader) -> None:
    loaded = load_reader("bundled", llm=None)  # type: ignore[arg-type]
    assert isinstance(loaded, BundledReader)
    assert Path(loaded.model_name) == BUNDLED_READER_DIR
    assert loaded.calibration_key.startswith("bundled:minilm_dpr:")


def test_extracts_the_answer_from_a_passage_that_holds_it(reader: BundledReader) -> None:
    out = reader.read("Where was Kevin Drew born?", DREW)
    assert isinstance(out, ReaderOutput)
    assert "toronto" in out.answer.lower()
    bus = reader.read("Where do Greyhound buses in Toronto leave from?", GREYHOUND)
    assert bus.answer == "Toronto Coach Terminal"
    assert bus.confidence > reader.default_threshold  # sure enough to overrule the LLM


def test_a_passage_without_the_answer_scores_below_one_that_has_it(reader: BundledReader) -> None:
    right = reader.read("Where was Kevin Drew born?", DREW)
    wrong = reader.read("Where was Kevin Drew born?", PEAR)
    assert wrong.confidence < right.confidence
    assert wrong.confidence < reader.default_threshold


def test_batch_agrees_with_one_at_a_time(reader: BundledReader) -> None:
    pairs = [
        ("Where was Kevin Drew born?", DREW),
        ("Where do Greyhound buses in Toronto leave from?", GREYHOUND),
        ("What genus is the pear in?", PEAR),
        ("Where was Kevin Drew born?", PEAR),
    ]
    assert_reads_close(reader.read_batch(pairs), [reader.read(q, p) for q, p in pairs])


def test_reads_a_long_passage_past_its_first_window(reader: BundledReader) -> None:
    filler = " ".join(f"The committee met on day {i} and discussed the annual budget." for i in range(60))
    passage = Passage(f"{filler} The new library was designed by the architect Zaha Hadid.", "Report")
    out = reader.read("Who designed the new library?", passage)
    assert "hadid" in out.answer.lower()


def test_an_empty_passage_reads_as_no_answer(reader: BundledReader) -> None:
    assert reader.read("Where was Kevin Drew born?", Passage("", "Kevin Drew")) == ReaderOutput("", MIN_CONFIDENCE)


def test_missing_weights_name_the_directory(tmp_path: Path) -> None:
    with pytest.raises(ModelNotFoundError, match=str(tmp_path)):
        BundledReader(tmp_path).load()


def test_reads_in_windows_of_the_length_its_weights_were_trained_at(tmp_path: Path) -> None:
    meta = json.loads((BUNDLED_READER_DIR / "training.json").read_text(encoding="utf-8"))
    assert BundledReader().max_length == trained_window() == int(meta["max_length"])
    assert BundledReader(max_length=128).max_length == 128  # an explicit length wins
    assert trained_window(tmp_path) == DEFAULT_WINDOW  # no training.json
    for bad in ('{"max_length": "wide"}', '{"args": {"max_length": 4096}}', "[1, 2]", "{not json"):
        (tmp_path / "training.json").write_text(bad, encoding="utf-8")
        assert trained_window(tmp_path) == DEFAULT_WINDOW, bad
    (tmp_path / "training.json").write_text('{"args": {"max_length": "256"}}', encoding="utf-8")
    assert trained_window(tmp_path) == 256
