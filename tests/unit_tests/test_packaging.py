"""The wheel as PyPI would get it: its licence metadata and files cover the code and the bundled weights."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_wheel_declares_and_ships_both_licences(tmp_path: Path) -> None:
    builders = pytest.importorskip("hatchling.builders.wheel")
    wheel = next(iter(builders.WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"])))
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = z.read(meta_name).decode("utf-8").splitlines()
        licence_texts = {n.rsplit("/", 1)[-1]: z.read(n).decode("utf-8") for n in names if "/licenses/" in n}
    assert "License-Expression: Apache-2.0 AND CC-BY-SA-4.0" in meta
    # The CC BY-SA weights are in the wheel, so their licence is too.
    assert any(n.endswith("ir/readers/minilm_dpr/model.safetensors") for n in names)
    assert "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION" in licence_texts["Apache-2.0.txt"]
    assert "Attribution-ShareAlike 4.0 International Public License" in licence_texts["CC-BY-SA-4.0.txt"]
    assert "END OF TERMS AND CONDITIONS" in licence_texts["LICENSE"] and "CC BY-SA 4.0" in licence_texts["LICENSE"]


def test_the_wheel_ships_the_demo_corpus(tmp_path: Path) -> None:
    builders = pytest.importorskip("hatchling.builders.wheel")
    wheel = next(iter(builders.WheelBuilder(str(ROOT)).build(directory=str(tmp_path), versions=["standard"])))
    with zipfile.ZipFile(wheel) as z:
        z.extractall(tmp_path / "site")
    shipped = tmp_path / "site" / "searchain_graph" / "ir" / "demo_data"
    for name in ("searchain_demo.jsonl", "hotpotqa_dev200_paragraphs.jsonl", "README.md"):
        assert (shipped / name).read_bytes() == (ROOT / "examples" / "data" / name).read_bytes()
