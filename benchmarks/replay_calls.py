"""``searchain eval`` with an LLM that only replays the replies a cache file holds: does the code send the same prompts?

An evaluation run with ``--cache FILE`` stores every LLM call it made. This runs ``searchain eval``
again with a chat model that answers each call from ``FILE`` by its prompt alone (the messages as
LangChain's cache serialises them; the model's settings are not part of the match, so a version
of the package that names its model differently still matches) and never generates. A prompt the
file does not hold is a miss: that question ends with an error, and the miss is counted. With
``PYTHONPATH`` pointed at another checkout, it runs that version's code on the same replies::

    git worktree add /tmp/before 0859ee6
    python benchmarks/replay_calls.py --cache runs/report-cache.sqlite -- --dataset hotpotqa \\
        --data ../shared/data/hotpotqa/ircot_dev_subsampled.first200.jsonl --reader bundled \\
        --methods searchain --preset paper --rerank 5 --limit 46 --concurrency 1 --out runs/now.jsonl
    PYTHONPATH=/tmp/before/src python benchmarks/replay_calls.py --cache runs/report-cache.sqlite \\
        -- ... --confidence-threshold 4.36 --out runs/before.jsonl
    python benchmarks/compare_records.py now=runs/now.jsonl before=runs/before.jsonl

Every call answered from the file and the same prediction on every question mean that the two
versions ask the LLM the same things and conclude the same from its replies: a difference between
their real runs' records then lies in the LLM's replies (the engine's batching and prefix reuse
can turn a near-tied greedy token), not in the code. The arguments after ``--`` are ``searchain
eval``'s; give the run's own settings (a setting whose default changed between the versions is
given explicitly), and no ``--cache`` (the file is read here, read-only, from a copy).
"""

from __future__ import annotations

import argparse
import hashlib
import sqlite3
import sys
import tempfile
import threading
import warnings
from contextlib import closing
from pathlib import Path
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.load import dumps, loads
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field, PrivateAttr


class ReplayedCalls(BaseChatModel):
    """A chat model that answers only from a ``SQLiteLLMCache`` file, matched by prompt; a miss raises."""

    path: str
    calls: dict[str, int] = Field(default_factory=lambda: {"answered": 0, "missed": 0, "ambiguous": 0})
    _conn: sqlite3.Connection = PrivateAttr()
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "replayed-calls"

    def model_post_init(self, context: Any) -> None:
        self._conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)

    def close(self) -> None:
        """Close the file."""
        self._conn.close()

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        # The prompt as BaseChatModel's cache lookup writes it (the messages without their ids), and
        # its digest as SQLiteLLMCache keys it: written out here, since the replay also runs the
        # code of versions that predate ``searchain_graph.llms.call_cache``.
        bare = [m.model_copy(update={"id": None}) if getattr(m, "id", None) is not None else m for m in messages]
        key = hashlib.sha256(dumps(bare).encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            rows = self._conn.execute(
                "SELECT llm_key, generation FROM llm_calls WHERE prompt_key = ? ORDER BY llm_key, idx", (key,)
            ).fetchall()
            if not rows:
                self.calls["missed"] += 1
                raise LookupError("the cache file holds no reply to this prompt")
            self.calls["answered"] += 1
            if len({row[0] for row in rows}) > 1:  # the same prompt under two model settings
                self.calls["ambiguous"] += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ``loads`` is marked beta
            generation = loads(rows[0][1], allowed_objects="core")
        if not isinstance(generation, ChatGeneration):
            raise TypeError(f"the cache file holds a {type(generation).__name__}, not a chat generation")
        return ChatResult(generations=[generation])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, required=True, help="the SQLiteLLMCache file of the run to replay")
    parser.add_argument("eval_args", nargs=argparse.REMAINDER, help="-- then searchain eval's arguments")
    args = parser.parse_args(argv)
    eval_args = args.eval_args[1:] if args.eval_args[:1] == ["--"] else args.eval_args
    if not args.cache.is_file():
        parser.error(f"no cache file at {args.cache}")
    if "--cache" in eval_args:
        parser.error("give the cache file as this script's --cache, not searchain eval's")

    import searchain_graph.llms.loading as loading
    from searchain_graph.cli.main import main as searchain

    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "calls.sqlite"
        with closing(sqlite3.connect(f"file:{args.cache}?mode=ro", uri=True)) as source:
            with closing(sqlite3.connect(copy)) as target:
                source.backup(target)  # a consistent copy, even while a run writes the file
        llm = ReplayedCalls(path=str(copy))
        loading.load_chat_model = lambda *a, **k: llm  # the CLI imports it at call time
        try:
            code = searchain(["eval", *eval_args])
        finally:
            llm.close()
        print(
            f"LLM calls answered from {args.cache}: {llm.calls['answered']}, missed: {llm.calls['missed']}"
            + (f", matched under two settings: {llm.calls['ambiguous']}" if llm.calls["ambiguous"] else "")
        )
    return 1 if llm.calls["missed"] else code


if __name__ == "__main__":
    sys.exit(main())
