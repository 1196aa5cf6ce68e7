"""``benchmarks/compare_records.py``: two runs' records compared on the questions they share."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import script_module


def _module() -> Any:
    return script_module("benchmarks/compare_records.py")


def _write(path: Path, right: list[bool]) -> None:
    rows = [
        {
            "qid": f"q{i}",
            "method": "searchain",
            "question": f"Q{i}?",
            "answers": ["a"],
            "prediction": "a" if ok else "b",
            "metrics": {"cover_em": float(ok), "em": float(ok), "f1": float(ok)},
            "usage": {"llm_calls": 2, "llm_cache_hits": 1, "input_tokens": 10, "output_tokens": 3},
            "seconds": 1.0,
        }
        for i, ok in enumerate(right, start=1)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_rows_keep_the_questions_at_those_places_of_the_first_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    compare = _module()
    _write(tmp_path / "a.jsonl", [True, True, True, False, True])
    _write(tmp_path / "b.jsonl", [False, False, True, False, False])
    monkeypatch.setattr(sys, "argv", ["compare_records.py", f"a={tmp_path / 'a.jsonl'}", f"b={tmp_path / 'b.jsonl'}"])
    compare.main()
    assert "a vs b: 5 questions" in capsys.readouterr().out
    argv = ["compare_records.py", "--rows", "3:", f"a={tmp_path / 'a.jsonl'}", f"b={tmp_path / 'b.jsonl'}"]
    monkeypatch.setattr(sys, "argv", argv)
    compare.main()
    out = capsys.readouterr().out
    assert "a vs b: 3 questions" in out  # q3, q4 and q5
    assert "cover_em: a - b +33.3" in out and "1 / 0" in out


@pytest.mark.parametrize("text", ["5:2", "0:3", "x:4", "7"])
def test_a_row_range_that_is_not_start_to_end_is_refused(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="is not START:END"):
        _module().row_range(text)


def test_an_open_end_reaches_the_end_of_the_file() -> None:
    assert _module().row_range("101:") == (101, 10**9)
    assert _module().row_range("1:100") == (1, 100)
