"""The reader's training script resumes where it stopped: k steps with a stop equal k steps without.

``training/train_reader.py`` runs for hours on two cores, so a stop (a session's end, SIGTERM) must
cost nothing but the steps since the last checkpoint. A tiny BERT encoder (2 layers, hidden 32)
trains on a tiny SQuAD file; one run goes straight through, the other stops half way and is run
again, and the two end with the same weights (within float tolerance: the resumed run rebuilds its
optimiser from the checkpoint and draws the same dropout, seeded by the step).
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.helpers import script_module
from tests.tiny_models import TINY_SIZES

CITIES = ["Toronto", "Montreal", "Paris", "Lyon", "Berlin", "Munich", "Rome", "Milan", "Oslo"]


def _script() -> ModuleType:
    module: ModuleType = script_module("training/train_reader.py", register=True)
    return module


def _squad(path: Path) -> Path:
    articles = []
    for a in range(3):
        paragraphs = []
        for p in range(3):
            city, other = CITIES[3 * a + p], CITIES[(3 * a + p + 4) % len(CITIES)]
            context = f"The singer number {a}{p} was born in {city}. The band toured {other} often."
            qas = [
                {"question": q, "answers": [{"text": x, "answer_start": context.index(x)}]}
                for q, x in (
                    (f"Where was singer number {a}{p} born?", city),
                    (f"Which city did band {a}{p} tour?", other),
                )
            ]
            paragraphs.append({"context": context, "qas": qas})
        articles.append({"title": f"Article_{a}", "paragraphs": paragraphs})
    with gzip.open(path, "wt", encoding="utf-8") as fh:
        json.dump({"data": articles, "version": "1.1"}, fh)
    return path


def _encoder(path: Path, squad: Path) -> Path:
    import torch
    from transformers import BertConfig, BertModel, BertTokenizerFast

    with gzip.open(squad, "rt", encoding="utf-8") as fh:
        words = set(re.findall(r"\w+|[^\w\s]", fh.read().lower()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(words)]
    path.mkdir(parents=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    BertTokenizerFast(vocab_file=str(path / "vocab.txt")).save_pretrained(path)
    torch.manual_seed(0)
    BertModel(BertConfig(vocab_size=len(vocab), max_position_embeddings=128, **TINY_SIZES)).save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, list[str]]:
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("training")
    squad = _squad(root / "squad.json.gz")
    base = _encoder(root / "encoder", squad)
    args = ["--squad", str(squad), "--base", str(base), "--examples", "24", "--batch-size", "4"]
    return _script(), [*args, "--max-length", "64", "--save-every", "1", "--log-every", "1", "--threads", "1"]


def _weights(module: ModuleType, out: Path) -> dict[str, Any]:
    import torch

    ckpt = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=False)
    return {"step": ckpt["step"], "model": ckpt["model"]}


def test_a_stopped_run_resumed_matches_one_without_a_stop(setup: tuple[ModuleType, list[str]], tmp_path: Path) -> None:
    import torch

    module, args = setup
    assert module.main([*args, "--out", str(tmp_path / "straight")]) == 0
    assert module.main([*args, "--out", str(tmp_path / "stopped"), "--stop-at", "3"]) == 0
    assert _weights(module, tmp_path / "stopped")["step"] == 3
    assert module.main([*args, "--out", str(tmp_path / "stopped")]) == 0
    straight, resumed = _weights(module, tmp_path / "straight"), _weights(module, tmp_path / "stopped")
    assert straight["step"] == resumed["step"] == 6
    for name, tensor in straight["model"].items():
        assert torch.allclose(tensor, resumed["model"][name], atol=1e-5, rtol=1e-4), name
    log = [json.loads(line) for line in (tmp_path / "stopped" / "train_log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in log] == [1, 2, 3, 4, 5, 6]  # the resumed run went on from step 4


def test_an_export_carries_the_step_and_the_data_order(setup: tuple[ModuleType, list[str]], tmp_path: Path) -> None:
    module, args = setup
    assert module.main([*args, "--out", str(tmp_path / "run"), "--stop-at", "2"]) == 0
    base = args[args.index("--base") + 1]
    assert module.main(["--out", str(tmp_path / "run"), "--base", base, "--export", str(tmp_path / "export")]) == 0
    meta = json.loads((tmp_path / "export" / "training.json").read_text())
    assert meta["step"] == 2 and meta["args"]["seed"] == "13" and meta["args"]["examples"] == "24"
    # A fresh machine with only the export goes on from its step, over the same example order.
    assert module.main([*args, "--out", str(tmp_path / "fresh"), "--init", str(tmp_path / "export")]) == 0
    assert _weights(module, tmp_path / "fresh")["step"] == 6


def test_mined_pairs_saved_compactly_load_back_in_their_order(
    setup: tuple[ModuleType, list[str]], tmp_path: Path
) -> None:
    module, args = setup
    squad = Path(args[args.index("--squad") + 1])
    pairs = module.load_pairs(squad, 13)
    assert len(pairs) == 36 and all(p.answer_start >= 0 for p in pairs[::2])
    module.save_pairs(pairs, tmp_path / "pairs.json.xz")
    assert module.load_saved_pairs(tmp_path / "pairs.json.xz") == pairs
    with pytest.raises(ValueError, match="alternate"):
        module.save_pairs(pairs[1:], tmp_path / "bad.json.xz")
    assert not (tmp_path / "bad.json.xz").exists()


def test_the_gpu_script_trains_evaluates_and_exports_on_any_device(
    setup: tuple[ModuleType, list[str]], tmp_path: Path
) -> None:
    """``train_reader_gpu.py`` on the CPU: the pairs file, a schedule cut to the steps asked, the
    dev predictions at the start and the end, and an export that loads as a ``DPRReader``."""
    import lzma

    from transformers import DPRReader

    module, args = setup
    base = args[args.index("--base") + 1]
    assert module.main([*args, "--out", str(tmp_path / "run"), "--stop-at", "1"]) == 0
    assert module.main(["--out", str(tmp_path / "run"), "--base", base, "--export", str(tmp_path / "init")]) == 0
    squad = Path(args[args.index("--squad") + 1])
    module.save_pairs(module.load_pairs(squad, 13), tmp_path / "pairs.json.xz")
    dev = [["q1", "Where was singer number 00 born?", "Article 0", "The singer number 00 was born in Toronto."]]
    with lzma.open(tmp_path / "dev.json.xz", "wt", encoding="utf-8") as fh:
        json.dump(dev, fh)
    gpu = script_module("training/train_reader_gpu.py")
    out = tmp_path / "gpu"
    argv = ["--pairs", str(tmp_path / "pairs.json.xz"), "--dev", str(tmp_path / "dev.json.xz")]
    argv += ["--init", str(tmp_path / "init"), "--out", str(out), "--device", "cpu", "--workers", "0"]
    argv += ["--batch-size", "4", "--max-length", "64", "--eval-length", "64", "--max-steps", "3", "--probe", "2"]
    assert gpu.main([*argv, "--warmup", "1", "--time-budget", "600", "--reserve", "1"]) == 0
    predictions = json.loads((out / "dev_predictions.json").read_text())
    assert list(predictions) == ["0", "3:final"] and set(predictions["0"]) == {"q1"}
    assert isinstance(predictions["3:final"]["q1"]["answer"], str)
    meta = json.loads((out / "minilm_dpr" / "training.json").read_text())
    assert meta["step"] == 3 and meta["init"]["step"] == 1 and meta["args"]["max_length"] == "64"
    DPRReader.from_pretrained(out / "minilm_dpr")
    log = [json.loads(line) for line in (out / "train_log.jsonl").read_text().splitlines()]
    assert log[-1]["step"] == 3 and log[-1]["lr"] == 0.0  # the schedule decayed to 0 at its cut end
