"""Fuzzing at scale: the property tests of ``tests/unit_tests/test_fuzz.py`` (and the passage
metadata's, ``test_passage_metadata.py``) with many cases each.

Runs pytest on them with ``SEARCHAIN_FUZZ_EXAMPLES`` cases per property (10,000 by
default; CI runs 200) and Hypothesis's statistics, then prints, per property, the cases that
passed, failed and were rejected, and the total. Exits non-zero when any case failed.

    python benchmarks/fuzz.py --examples 10000
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = [
    "tests/unit_tests/test_fuzz.py",
    "tests/unit_tests/test_passage_metadata.py::test_anything_becomes_strict_json",
    "tests/unit_tests/test_passage_metadata.py::test_strict_json_is_kept",
]
_TEST = re.compile(r"^(tests/\S+::(\w+)):", re.MULTILINE)
_COUNTS = re.compile(r"(\d+) passing, (\d+) failing, and (\d+) invalid test cases")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="cases per property (default 10,000)")
    args = parser.parse_args()
    env = {**os.environ, "SEARCHAIN_FUZZ_EXAMPLES": str(args.examples)}
    command = [sys.executable, "-m", "pytest", *MODULES, "-q", "-p", "no:randomly", "--hypothesis-show-statistics"]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    text = done.stdout + done.stderr
    rows = []
    for match in _TEST.finditer(text):
        following = _TEST.search(text, match.end())
        block = text[match.end() : following.start() if following else None]
        passed = failed = invalid = 0
        for counts in _COUNTS.finditer(block):
            passed += int(counts.group(1))
            failed += int(counts.group(2))
            invalid += int(counts.group(3))
        rows.append((match.group(2), passed, failed, invalid))
    print(f"{args.examples} cases asked per property; {seconds:.0f} s")
    print(f"{'property':<62} {'passed':>8} {'failed':>7} {'rejected':>9}")
    for name, passed, failed, invalid in rows:
        print(f"{name:<62} {passed:>8} {failed:>7} {invalid:>9}")
    total = sum(r[1] for r in rows)
    print(f"{'total':<62} {total:>8} {sum(r[2] for r in rows):>7} {sum(r[3] for r in rows):>9}")
    if done.returncode != 0:
        print(text[-4000:], file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    raise SystemExit(main())
