"""The dequantised-weights cache when two processes fill it at once (``llms.weights``)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from searchain_graph.llms.weights import save_dequantized


class _Saves:
    """Writes ``name`` into the directory it is given, as ``save_pretrained`` does."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.config = SimpleNamespace()

    def save_pretrained(self, directory: Path) -> None:
        (Path(directory) / self.name).write_text(json.dumps({"by": "this process"}), encoding="utf-8")


def test_a_cache_filled_by_a_concurrent_writer_is_used_and_nothing_is_left_aside(tmp_path: Path) -> None:
    target = tmp_path / "dequantized" / "model-abc"
    target.mkdir(parents=True)
    (target / "config.json").write_text(json.dumps({"by": "the other process"}), encoding="utf-8")

    assert save_dequantized(_Saves("config.json"), _Saves("tokenizer.json"), target)

    assert json.loads((target / "config.json").read_text(encoding="utf-8")) == {"by": "the other process"}
    assert sorted(p.name for p in target.parent.iterdir()) == ["model-abc"]


def test_a_target_in_the_way_without_a_model_is_reported_and_cleaned_up(tmp_path: Path) -> None:
    target = tmp_path / "dequantized" / "model-abc"
    target.mkdir(parents=True)
    (target / "stray.txt").write_text("not a model", encoding="utf-8")

    assert not save_dequantized(_Saves("config.json"), _Saves("tokenizer.json"), target)

    assert sorted(p.name for p in target.parent.iterdir()) == ["model-abc"]
    assert not (target / "config.json").exists()


def test_a_fresh_cache_is_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "dequantized" / "model-abc"

    assert save_dequantized(_Saves("config.json"), _Saves("tokenizer.json"), target)

    assert sorted(p.name for p in target.iterdir()) == ["config.json", "tokenizer.json"]
    assert sorted(p.name for p in target.parent.iterdir()) == ["model-abc"]
