"""Throughput of the extractive readers: batched ``read_batch`` against one ``read`` at a time.

Builds random-init models at the real architecture size (bert-base: 12 layers, hidden 768,
vocabulary 30522; no hub access needed), with a WordPiece vocabulary made from the shipped
HotpotQA paragraphs, saves them to a temporary directory and loads them through the readers.
The pairs are HotpotQA dev questions with the shipped paragraphs as passages
(:class:`~searchain_graph.ir.readers.base.Passage`, title and text apart, as the graph passes
them). Weights are random, so answers are meaningless; the cost per pair is that of the real
checkpoints, since it depends only on the architecture and the number of tokens.

Modes, each over the same ``--pairs`` pairs:

* ``one at a time``: ``reader.read(q, p)`` per pair;
* ``chains of 5``: ``reader.read_batch`` on groups of ``--chain`` pairs (one SearChain round
  reads the nodes of a chain in one call);
* ``all in one read_batch``: ``reader.read_batch`` on all pairs (mini-batches of ``--batch-size``).

"best s" sums, over the chains, the best of ``--repeats`` runs (see :func:`bench`): on a
shared machine it is the figure to compare; "median s" shows how much load there was.

    python benchmarks/readers.py --pairs 60 --repeats 3
    python benchmarks/readers.py --pairs 60 --max-padding inf   # plain padded mini-batches
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import torch

from searchain_graph.ir.corpus import load_corpus
from searchain_graph.ir.readers.base import Passage, ReaderOutput, passage_of
from searchain_graph.ir.readers.dpr import DPRReader
from searchain_graph.ir.readers.extractive import ExtractiveQAReader

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"
BERT_VOCAB_SIZE = 30522
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def load_pairs(n: int, seed: int) -> list[tuple[str, Passage]]:
    """``n`` (question, passage) pairs: dev questions with paragraphs of the shipped corpus."""
    import json

    questions = [
        json.loads(line)["question_text"]
        for line in (DATA / "hotpotqa_dev20_questions.jsonl").read_text().splitlines()
        if line.strip()
    ]
    passages = [passage_of(d) for d in load_corpus(DATA / "hotpotqa_dev200_paragraphs.jsonl")]
    rng = random.Random(seed)
    return [(questions[i % len(questions)], rng.choice(passages)) for i in range(n)]


def write_vocab(texts: Sequence[str], path: Path) -> Path:
    """A BERT-size WordPiece vocabulary: the texts' words, characters and ##characters, padded."""
    words: dict[str, None] = {}
    for text in texts:
        for word in re.findall(r"\w+|[^\w\s]", text.lower()):
            words[word] = None
    chars = sorted({c for w in words for c in w})
    vocab = list(dict.fromkeys([*SPECIALS, *chars, *(f"##{c}" for c in chars), *words]))
    vocab += [f"[unused{i}]" for i in range(BERT_VOCAB_SIZE - len(vocab))]
    out = path / "vocab.txt"
    out.write_text("\n".join(vocab[:BERT_VOCAB_SIZE]) + "\n", encoding="utf-8")
    return out


def build_model(kind: str, vocab: Path, path: Path) -> Path:
    """A random-init bert-base DPR reader (``kind="dpr"``) or BERT QA model (``"qa"``), saved at ``path``."""
    from transformers import BertConfig, BertForQuestionAnswering, BertTokenizerFast, DPRConfig, DPRReaderTokenizerFast
    from transformers import DPRReader as HFDPRReader

    torch.manual_seed(0)
    path.mkdir()
    if kind == "dpr":
        DPRReaderTokenizerFast(vocab=str(vocab)).save_pretrained(path)
        HFDPRReader(DPRConfig()).save_pretrained(path)  # DPRConfig() is bert-base
    else:
        BertTokenizerFast(vocab=str(vocab)).save_pretrained(path)
        BertForQuestionAnswering(BertConfig()).save_pretrained(path)
    return path


def read_each(reader: DPRReader | ExtractiveQAReader, pairs: list[tuple[str, Passage]]) -> list[ReaderOutput]:
    return [reader.read(q, p) for q, p in pairs]


def bench(reader: DPRReader | ExtractiveQAReader, pairs: list[tuple[str, Passage]], chain: int, repeats: int) -> None:
    """Time the modes and print a table.

    Timing is interleaved at the grain of one chain: for each group of ``chain`` pairs, its
    pairs one at a time, then the group in one ``read_batch``; each group's time is the best
    of ``repeats`` and the totals are sums over the groups. Load from other processes then
    hits both modes alike, and the best-of discards the runs it hit. ``one batch`` (all pairs
    in one call) is timed as a whole, best of ``repeats``.
    """
    lengths = [len(w.input_ids) for q, p in pairs for w in reader._windows(q, p)]
    padding = reader.max_padding if reader.max_padding is not None else "default (0.2 on cpu, none on cuda)"
    print(
        f"\n{type(reader).__name__}: {len(pairs)} pairs, {len(lengths)} windows, tokens per window "
        f"mean {statistics.mean(lengths):.0f} / max {max(lengths)}, batch_size {reader.batch_size}, "
        f"max_padding {padding}"
    )
    groups = [pairs[i : i + chain] for i in range(0, len(pairs), chain)]
    reader.read_batch(pairs[:chain])  # warm-up

    def clock(fn: Callable[[], object]) -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    singles = [[0.0] * repeats for _ in groups]
    batched = [[0.0] * repeats for _ in groups]
    whole = [0.0] * repeats
    for r in range(repeats):
        for g, group in enumerate(groups):
            singles[g][r] = clock(partial(read_each, reader, group))
            batched[g][r] = clock(partial(reader.read_batch, group))
        whole[r] = clock(lambda: reader.read_batch(pairs))
    rows = [
        ("one at a time (read)", sum(min(t) for t in singles), sum(statistics.median(t) for t in singles)),
        (f"chains of {chain} (read_batch)", sum(min(t) for t in batched), sum(statistics.median(t) for t in batched)),
        ("all in one read_batch", min(whole), statistics.median(whole)),
    ]
    base = rows[0][1]
    print(f"{'mode':<30} {'best s':>7} {'median s':>8} {'pairs/s':>8} {'speedup':>8}")
    for name, best, median in rows:
        print(f"{name:<30} {best:7.2f} {median:8.2f} {len(pairs) / best:8.1f} {base / best:7.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=60, help="pairs per mode (default 60)")
    parser.add_argument("--chain", type=int, default=5, help="pairs per read_batch call in chain mode (5)")
    parser.add_argument("--batch-size", type=int, default=32, help="windows per forward pass (32)")
    parser.add_argument(
        "--max-padding", type=float, default=None, help="readers' max_padding (default: theirs; inf: no limit)"
    )
    parser.add_argument("--device", default="cpu", help="torch device (default cpu)")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per mode, interleaved (3)")
    parser.add_argument("--reader", choices=["dpr", "qa", "both"], default="dpr")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    pairs = load_pairs(args.pairs, args.seed)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, device {args.device}")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = [passage_of(d).joined() for d in load_corpus(DATA / "hotpotqa_dev200_paragraphs.jsonl")]
        vocab = write_vocab([q for q, _ in pairs] + corpus, Path(tmp))
        options: dict[str, Any] = {
            "device": args.device,
            "batch_size": args.batch_size,
            "max_padding": args.max_padding,
        }
        if args.reader in ("dpr", "both"):
            reader = DPRReader(build_model("dpr", vocab, Path(tmp) / "dpr"), **options)
            bench(reader.load(), pairs, args.chain, args.repeats)
        if args.reader in ("qa", "both"):
            qa = ExtractiveQAReader(build_model("qa", vocab, Path(tmp) / "qa"), **options)
            bench(qa.load(), pairs, args.chain, args.repeats)


if __name__ == "__main__":
    main()
