r"""Train the bundled reader on a lent GPU, in one sitting: the full schedule, timed to fit a lease.

``train_reader.py`` trains on two CPU cores, resumably, for hours. A lent GPU runs
the same model, the same pairs and the same losses for whole epochs in minutes, but only for a
lease of a few minutes, on a machine that has no package registry and holds nothing afterwards.
So this script:

* reads the pairs that ``train_reader.load_pairs`` mined here (``save_pairs``: the questions in
  the seeded order, each with its BM25 or same-article negative), so the machine needs neither
  BM25 nor the package; epoch 1 keeps that order, later epochs shuffle the pairs (seeded);
* starts from an exported ``DPRReader`` directory (``--init``: the shipped weights);
* fits its schedule to the time it has (``--time-budget``): after ``--probe`` steps it measures
  the steps per second and sets the schedule's length to what fits (at most ``--epochs``
  epochs), so the learning rate still decays to 0 by the end; a fixed warm-up of
  ``--warmup`` steps restarts the optimiser (what the shipped step's optimiser state would have
  been is not kept);
* batches on worker processes (dynamic padding to a multiple of 8), runs in bf16 autocast;
* writes SQuAD v1.1 dev predictions (the gold paragraph read, DPR's layout, spans of at most
  ``--max-answer-tokens`` tokens) at the start, at every quarter of the schedule and at the end,
  so a learning curve is scored afterwards with the package's official EM/F1
  (``training/score_reader_curve.py``);
* exports the final weights in fp16 as a ``DPRReader`` directory (written aside, then renamed).

    python training/train_reader_gpu.py --pairs .gpu/pairs.json.xz --dev .gpu/dev2000.json.xz \\
        --init src/searchain_graph/ir/readers/minilm_dpr --out /tmp/reader --time-budget 420
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # the tokenizer is used before the workers fork

from train_reader import QUERY_TOKENS, Example, decay_groups, encode, load_saved_pairs  # noqa: E402


class StepBatches:
    """Batch ``i`` of the schedule: the pairs of that step, encoded with the step's own seed."""

    def __init__(
        self, examples: list[Example], order: list[int], tok: Any, batch_size: int, max_length: int, seed: int
    ) -> None:
        self.examples, self.order, self.tok = examples, order, tok
        self.pairs_per_step = batch_size // 2
        self.max_length, self.seed = max_length, seed

    def __len__(self) -> int:
        return math.ceil(len(self.order) / self.pairs_per_step)

    def __getitem__(self, step: int) -> dict[str, Any]:
        import torch

        rng = random.Random(self.seed * 1_000_003 + step)
        feats = []
        for k in self.order[step * self.pairs_per_step : (step + 1) * self.pairs_per_step]:
            for ex in (self.examples[2 * k], self.examples[2 * k + 1]):
                f = encode(self.tok, ex, self.max_length, rng)
                if f is not None:
                    feats.append({**f, "pair": k})
        width = max((len(f["input_ids"]) for f in feats), default=1)
        width = -(-width // 8) * 8
        ids = torch.full((len(feats), width), self.tok.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(feats), width), dtype=torch.long)
        for i, f in enumerate(feats):
            ids[i, : len(f["input_ids"])] = torch.tensor(f["input_ids"])
            mask[i, : len(f["input_ids"])] = 1
        where = {(f["pair"], f["relevant"] > 0.5): i for i, f in enumerate(feats)}
        keys = dict.fromkeys(f["pair"] for f in feats)
        both = [(where[k, True], where[k, False]) for k in keys if (k, True) in where and (k, False) in where]
        return {
            "ids": ids,
            "mask": mask,
            "relevant": torch.tensor([f["relevant"] for f in feats]),
            "start": torch.tensor([f["start"] for f in feats]),
            "end": torch.tensor([f["end"] for f in feats]),
            "pos_idx": torch.tensor([p for p, _ in both], dtype=torch.long),
            "neg_idx": torch.tensor([n for _, n in both], dtype=torch.long),
        }


def dev_items(path: Path) -> list[tuple[str, str, str, str]]:
    """SQuAD dev questions as (id, question, title, context).

    ``path`` is a SQuAD ``.json.gz`` file, or a ``.json.xz`` list of such rows (a sample small
    enough to travel with the working tree, ``--write-dev-sample``).
    """
    if path.suffix == ".xz":
        import lzma

        with lzma.open(path, "rt", encoding="utf-8") as fh:
            return [(a, b, c, d) for a, b, c, d in json.load(fh)]
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        data = json.load(fh)["data"]
    return [
        (qa["id"], qa["question"], a["title"].replace("_", " "), para["context"])
        for a in data
        for para in a["paragraphs"]
        for qa in para["qas"]
    ]


def write_dev_sample(source: Path, n: int, path: Path) -> None:
    """``n`` dev questions drawn with seed 0, in the file's order, as a ``.json.xz`` list."""
    import lzma

    items = dev_items(source)
    keep = set(random.Random(0).sample(range(len(items)), min(n, len(items))))
    with lzma.open(path, "wt", encoding="utf-8", preset=9) as fh:
        json.dump([items[i] for i in sorted(keep)], fh, ensure_ascii=False, separators=(",", ":"))


def predict(model: Any, tok: Any, items: list[tuple[str, str, str, str]], args: argparse.Namespace) -> dict[str, Any]:
    """Each question's best span in its gold paragraph (first window) and the relevance logit."""
    import torch

    model.eval()
    out: dict[str, Any] = {}
    rows = []
    for qid, q, title, ctx in items:
        qi = tok(q, add_special_tokens=False)["input_ids"][:QUERY_TOKENS]
        ti = tok(title, add_special_tokens=False)["input_ids"][:QUERY_TOKENS]
        enc = tok(ctx, add_special_tokens=False, return_offsets_mapping=True)
        head = [tok.cls_token_id, *qi, tok.sep_token_id, *ti, tok.sep_token_id]
        room = args.eval_length - len(head)
        rows.append((qid, ctx, head + enc["input_ids"][:room], len(head), enc["offset_mapping"][:room]))
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.device == "cuda"):
        for b in range(0, len(rows), 256):
            chunk = rows[b : b + 256]
            width = max(len(r[2]) for r in chunk)
            ids = torch.full((len(chunk), width), tok.pad_token_id, dtype=torch.long)
            allowed = torch.zeros((len(chunk), width), dtype=torch.bool)
            for i, (_, _, seq, first, _) in enumerate(chunk):
                ids[i, : len(seq)] = torch.tensor(seq)
                allowed[i, first : len(seq)] = True
            mask = (ids != tok.pad_token_id).long()
            res = model(input_ids=ids.to(args.device), attention_mask=mask.to(args.device))
            neg = torch.finfo(torch.float32).min / 4
            allowed = allowed.to(args.device)
            sl = res.start_logits.float().masked_fill(~allowed, neg)
            el = res.end_logits.float().masked_fill(~allowed, neg)
            score = sl[:, :, None] + el[:, None, :]
            span_ok = torch.ones(width, width, dtype=torch.bool, device=args.device)
            score = score.masked_fill(~span_ok.triu().tril(args.max_answer_tokens - 1), neg)
            best = score.flatten(1).argmax(dim=1).cpu()
            rel = res.relevance_logits.float().cpu()
            for i, (qid, ctx, _, first, offsets) in enumerate(chunk):
                s, e = divmod(int(best[i]), width)
                a = ctx[offsets[s - first][0] : offsets[e - first][1]] if s >= first and e >= first else ""
                out[qid] = {"answer": a, "relevance": round(float(rel[i]), 4)}
    model.train()
    return out


def main(argv: list[str] | None = None) -> int:
    """Train, writing the log, the dev predictions and the export under ``--out``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pairs", type=Path, help="train_reader.save_pairs's file")
    p.add_argument("--dev", type=Path, required=True, help="SQuAD v1.1 dev (.json.gz), or a sample of it (.json.xz)")
    p.add_argument("--init", type=Path, help="an exported DPRReader directory to start from")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--epochs", type=float, default=2.0)
    p.add_argument("--batch-size", type=int, default=32, help="examples a step (pairs x 2)")
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=300)
    p.add_argument("--max-length", type=int, default=320)
    p.add_argument("--eval-length", type=int, default=350)
    p.add_argument("--max-answer-tokens", type=int, default=10)
    p.add_argument("--relevance-weight", type=float, default=2.0)
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 1))
    p.add_argument("--time-budget", type=float, default=420.0, help="seconds for everything, export included")
    p.add_argument("--reserve", type=float, default=75.0, help="seconds kept for the last evaluation and export")
    p.add_argument("--probe", type=int, default=150, help="steps timed before the schedule's length is set")
    p.add_argument("--curve-questions", type=int, default=2000, help="dev questions at each quarter (all at the end)")
    p.add_argument("--max-steps", type=int, help="cap the schedule (a smoke test)")
    p.add_argument("--device", default=None)
    p.add_argument(
        "--write-dev-sample", type=int, metavar="N", help="write N --dev questions to --out (a .json.xz), then stop"
    )
    args = p.parse_args(argv)
    if args.write_dev_sample:
        write_dev_sample(args.dev, args.write_dev_sample, args.out)
        return 0
    if args.pairs is None or args.init is None:
        p.error("--pairs and --init are needed to train")
    t_start = time.perf_counter()

    import torch
    import torch.nn.functional as F
    from transformers import AutoTokenizer, DPRReader

    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.manual_seed(args.seed)
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    tok = AutoTokenizer.from_pretrained(args.init)
    model = DPRReader.from_pretrained(args.init).float().to(args.device)
    init_meta = json.loads((args.init / "training.json").read_text())
    examples = load_saved_pairs(args.pairs)
    n_pairs = len(examples) // 2
    dev = dev_items(args.dev)
    curve = set(random.Random(0).sample(range(len(dev)), min(args.curve_questions, len(dev))))
    curve_items = [dev[i] for i in sorted(curve)]
    print(f"{n_pairs:,} pairs, {len(dev):,} dev questions, device {args.device}", file=sys.stderr, flush=True)

    order: list[int] = []
    epoch = 0
    while len(order) < math.ceil(args.epochs * n_pairs):
        perm = list(range(n_pairs))
        if epoch:
            random.Random(args.seed * 7919 + epoch).shuffle(perm)
        order += perm
        epoch += 1
    order = order[: math.ceil(args.epochs * n_pairs)]
    batches = StepBatches(examples, order, tok, args.batch_size, args.max_length, args.seed)
    planned = len(batches) if args.max_steps is None else min(len(batches), args.max_steps)
    total = {"steps": planned}

    opt = torch.optim.AdamW(decay_groups(model), lr=args.lr, fused=args.device == "cuda")

    def lr_at(s: int) -> float:
        if s < args.warmup:
            return (s + 1) / args.warmup
        return max(0.0, (total["steps"] - s) / max(1, total["steps"] - args.warmup))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    predictions: dict[str, Any] = {"0": predict(model, tok, curve_items, args)}
    loader = torch.utils.data.DataLoader(
        batches,
        batch_size=None,
        sampler=range(planned),
        num_workers=args.workers,
        pin_memory=args.device == "cuda",
        prefetch_factor=8 if args.workers else None,
        persistent_workers=False,
    )
    log = (out / "train_log.jsonl").open("w", encoding="utf-8")
    step, seen = 0, 0
    running = torch.zeros(2, device=args.device)
    count = 0
    t_probe = None
    quarters: set[int] = set()
    t_train = time.perf_counter()
    for batch in loader:
        if step >= total["steps"]:
            break
        b = {k: v.to(args.device, non_blocking=True) for k, v in batch.items()}
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.device == "cuda"):
            res = model(input_ids=b["ids"], attention_mask=b["mask"])
        logits = res.relevance_logits.float()
        rel_loss = F.binary_cross_entropy_with_logits(logits, b["relevant"])
        if len(b["pos_idx"]):
            both = torch.stack([logits[b["pos_idx"]], logits[b["neg_idx"]]], dim=1)
            first = torch.zeros(len(b["pos_idx"]), dtype=torch.long, device=args.device)
            rel_loss = rel_loss + F.cross_entropy(both, first)
        # The span loss over the positives, weighted rather than indexed (no host sync a step).
        pos = b["relevant"]
        big_neg = torch.finfo(torch.float32).min / 2
        sl = res.start_logits.float().masked_fill(b["mask"] == 0, big_neg)
        el = res.end_logits.float().masked_fill(b["mask"] == 0, big_neg)
        each = F.cross_entropy(sl, b["start"], reduction="none") + F.cross_entropy(el, b["end"], reduction="none")
        span_loss = (each * pos).sum() / (2 * pos.sum().clamp(min=1))
        loss = args.relevance_weight * rel_loss + span_loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        seen += len(b["ids"])
        running += torch.stack([rel_loss.detach(), span_loss.detach()])
        count += 1
        if step == 20:
            if args.device == "cuda":
                torch.cuda.synchronize()
            t_probe = time.perf_counter()
        if step == args.probe and t_probe is not None:
            if args.device == "cuda":
                torch.cuda.synchronize()
            rate = (step - 20) / (time.perf_counter() - t_probe)
            left = args.time_budget - (time.perf_counter() - t_start) - args.reserve - 3 * 10
            fits = step + int(rate * left)
            total["steps"] = max(step + 1, min(planned, fits))
            print(
                f"{rate:.1f} steps/s: schedule {total['steps']:,} steps of {planned:,} planned "
                f"({total['steps'] * args.batch_size / 2 / n_pairs:.2f} epochs)",
                file=sys.stderr,
                flush=True,
            )
        if step % 100 == 0 or step == total["steps"]:
            rec = {
                "step": step,
                "of": total["steps"],
                "relevance_loss": round(float(running[0]) / count, 4),
                "span_loss": round(float(running[1]) / count, 4),
                "lr": sched.get_last_lr()[0],
                "examples_per_s": round(seen / (time.perf_counter() - t_train), 1),
                "seconds": round(time.perf_counter() - t_start, 1),
            }
            log.write(json.dumps(rec) + "\n")
            log.flush()
            if step % 500 == 0:
                print(json.dumps(rec), file=sys.stderr, flush=True)
            running.zero_()
            count = 0
        quarter = 4 * step // total["steps"]
        if step > args.probe and quarter in (1, 2, 3) and quarter not in quarters:
            quarters.add(quarter)
            predictions[str(step)] = predict(model, tok, curve_items, args)
    log.close()
    train_seconds = time.perf_counter() - t_train
    predictions[f"{step}:final"] = predict(model, tok, dev, args)
    (out / "dev_predictions.json").write_text(json.dumps(predictions, ensure_ascii=False) + "\n", encoding="utf-8")

    target = out / "minilm_dpr"
    tmp = Path(tempfile.mkdtemp(dir=out, prefix=".minilm_dpr."))
    model.half().cpu().save_pretrained(tmp, safe_serialization=True)
    tok.save_pretrained(tmp)
    meta = {
        "step": step,
        "examples_seen": seen,
        "epochs": round(step * args.batch_size / 2 / n_pairs, 3),
        "init": {
            "directory": str(args.init),
            "step": init_meta.get("step"),
            "examples_seen": init_meta.get("examples_seen"),
        },
        "train_seconds": round(train_seconds, 1),
        "device": torch.cuda.get_device_name() if args.device == "cuda" else args.device,
        "args": {k: str(v) for k, v in vars(args).items()},
    }
    (tmp / "training.json").write_text(json.dumps(meta, indent=1) + "\n")
    tmp.chmod(0o755)
    for f in tmp.iterdir():
        f.chmod(0o644)
    if target.exists():
        shutil.rmtree(target)
    os.replace(tmp, target)
    print(json.dumps(meta), file=sys.stderr, flush=True)
    print(f"done in {time.perf_counter() - t_start:.0f} s", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
