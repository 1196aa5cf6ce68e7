"""``examples/paper_setup.py`` end to end: ColBERT index + DPR reader (θ = 1.5) + SmolLM2.

The paper's checkpoints (``colbert-ir/colbertv2.0``, ``facebook/dpr-reader-multiset-base``)
need the Hugging Face hub, so the example is pointed at tiny random-init checkpoints of the
same classes, built here. Everything else is real: the example builds the ColBERT index over
the demo corpus with RAGatouille, loads it back, reads with the DPR reader and runs the graph
with SmolLM2. A random-init reader cannot be right; the checks are on the run, not on answers.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from searchain_graph.ir.corpus import load_corpus, passage_text
from searchain_graph.ir.index_dir import read_manifest
from tests.helpers import script_module
from tests.tiny_models import build_tiny_colbert, build_tiny_dpr

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples/data/searchain_demo.jsonl"


def _example() -> object:
    module: object = script_module("examples/paper_setup.py")
    return module


def test_paper_setup_example_runs_with_local_checkpoints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if importlib.util.find_spec("ragatouille") is None:
        pytest.skip("needs the colbert extra (RAGatouille)")
    texts = [passage_text(d) for d in load_corpus(DEMO)]
    colbert = build_tiny_colbert(tmp_path / "colbert", texts)
    words = sorted({w for t in texts for w in re.findall(r"\w+", t.lower())})
    chars = sorted({c for w in words for c in w} | set("0123456789"))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words, *chars, *(f"##{c}" for c in chars), *".,?!'()-"]
    dpr = build_tiny_dpr(tmp_path / "dpr", list(dict.fromkeys(vocab)))
    example = _example()
    argv = ["--corpus", str(DEMO), "--index", str(tmp_path / "index"), "--colbert-checkpoint", str(colbert)]
    argv += ["--reader-model", str(dpr), "--model", "smollm2", "--questions", "1", "--max-new-tokens", "96"]
    argv += ["--question", "Where was the performer of Spirit If... born?"]
    assert example.main(argv) == 0  # type: ignore[attr-defined]
    out = capsys.readouterr()
    assert "built a ColBERT index of 8 passages" in out.err
    assert read_manifest(tmp_path / "index")["retriever"] == "colbert"
    assert "Q: Where was the performer of Spirit If... born?" in out.out
    assert re.search(r"\d round\(s\), \d+ LLM calls", out.out)
    # The second run reuses the index instead of rebuilding it.
    assert example.main(argv) == 0  # type: ignore[attr-defined]
    assert "built a ColBERT index" not in capsys.readouterr().err


def test_paper_setup_example_explains_a_missing_checkpoint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    example = _example()
    argv = ["--index", str(tmp_path / "index"), "--colbert-checkpoint", str(tmp_path / "nowhere")]
    assert example.main(argv) == 2  # type: ignore[attr-defined]
    err = capsys.readouterr().err
    assert "nowhere" in err and ("not found" in err or "colbert" in err)
