"""The offline LLM's engines side by side in one run: first run, memory, speed, prefix cache, fidelity.

For each model (``--models``) and each candidate (``--candidates``; the first is the reference,
``torch`` = fp32 in transformers), in a process of its own so that load time and memory are its own:

* **first run** (``--cold``): a process with an empty cache (``SEARCHAIN_CACHE`` in a new
  directory) from nothing to the first answer: the parts joined, whatever conversion the engine
  needs, the load, one short question; and that process's **peak RSS, conversion included** (its
  own and its subprocesses');
* warm load, resident memory after loading, peak resident memory;
* prefill tokens/s (the SearChain round-1 prompt, demonstrations as chat turns, nothing cached) and
  decode tokens/s of one greedy request of ``--tokens`` new tokens;
* first token of a **new question with the shared prefix cached** (another question's round 1
  computed just before), and of round 2 with round 1 computed (a round continuing its conversation);
* aggregate output tokens/s of 1, 2 and 4 concurrent requests (``max_batch_size=4``);
* speculative decoding (``llama.cpp+ngram``, ``llama.cpp+draft`` with Qwen2.5-Coder-0.5B): decode
  tokens/s of a round-2 reply (it rewrites round 1's chain: the case prompt lookup is for), the
  acceptance rate, and whether the greedy reply is the plain engine's;
* decode as a share of the memory-bandwidth bound, on **the GGUF file's own bytes per token** (every
  tensor but the embedding table, of which one row is read) over the bandwidth measured in the same
  process;
* agreement with fp32 on ``--prompts`` HotpotQA dev questions: along each prompt's greedy reply of
  ``--agree-tokens`` tokens, the share of positions before the first token that differs from fp32's.

    OMP_NUM_THREADS=2 python benchmarks/llm_speed.py --cold --prompts 100 \\
        --candidates torch,onnx-int4,llama.cpp,llama.cpp+ngram,llama.cpp+draft --out rows.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared/data/hotpotqa/ircot_dev_subsampled.first200.jsonl"
FALLBACK = Path(__file__).resolve().parents[1] / "examples/data/hotpotqa_dev20_questions.jsonl"
README_QUESTION = "Where is the company that Sachin Warrier worked for as a software engineer headquartered?"
FEEDBACK = (
    "According to the Reference, the answer for Who is Sachin Warrier? should be a playback singer and composer, "
    "you can change your answer and continue constructing the reasoning chain."
)


def questions(n: int) -> list[str]:
    """HotpotQA dev questions (101 on of the shared sample; 1-100 are the reported ones)."""
    path = DATA if DATA.is_file() else FALLBACK
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out.append(record.get("question_text") or record.get("question"))
    out = [q for q in out if q]
    return (out[100:] if len(out) > 100 else out)[:n]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def peak_rss_mb() -> float:
    """Peak RSS of this process or any subprocess it waited for (a converter), whichever is larger."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 1024


def bandwidth_gbs() -> float:
    """Memory bandwidth with every core reading (numpy releases the GIL in ``sum``)."""
    cores = len(os.sched_getaffinity(0))
    arrays = [np.ones(256 * 2**20 // 8) for _ in range(cores)]
    for a in arrays:
        a.sum()

    def read(a: np.ndarray) -> None:
        for _ in range(5):
            a.sum()

    best = 0.0
    for _ in range(3):  # the best of three: other work only ever slows a reading down
        threads = [threading.Thread(target=read, args=(a,)) for a in arrays]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        best = max(best, 5 * sum(a.nbytes for a in arrays) / (time.perf_counter() - start) / 1e9)
    return best


def make_llm(model: str, candidate: str, batch: int = 1) -> Any:
    from searchain_graph.llms.chat_model import TransformersChatModel
    from searchain_graph.llms.packaged import QWEN_CODER_0_5B, packaged_gguf

    backend, _, speculation = candidate.partition("+")
    extra: dict[str, Any] = {"backend": backend, "max_new_tokens": 64, "max_batch_size": batch}
    if speculation:
        extra["speculation"] = speculation
        if speculation == "draft":
            extra["draft_model"] = str(packaged_gguf(QWEN_CODER_0_5B))
    if model == "smollm2":
        return TransformersChatModel.from_smollm2(**extra)
    return TransformersChatModel.from_packaged(model, **extra)


def chat_ids(llm: Any, turns: list[tuple[str, str]]) -> list[int]:
    from searchain_graph.method.adaptations.turns import turn_dicts

    return llm._encode(turn_dicts(turns))  # type: ignore[no-any-return]


def round1(question: str) -> list[tuple[str, str]]:
    from searchain_graph.method.adaptations.turns import coq_turns

    return coq_turns("multihop", question, layout="turns")


class Runner:
    """One candidate of one model behind the same few calls."""

    def __init__(self, model: str, candidate: str) -> None:
        self.candidate = candidate
        self.llm = make_llm(model, candidate, batch=4).load()
        self.gguf = Path(self.llm.model_path) / str(self.llm.gguf_file)
        self.cpp = candidate.startswith("llama.cpp")

    def forget(self) -> None:
        """Drop every kept prompt (llama.cpp: the next request is told not to use the cache)."""
        decoder = self.llm.decoder
        if decoder is not None and hasattr(decoder, "_kept"):
            decoder._kept.clear()
        self.llm._engine = None

    def first_token(self, ids: list[int], cached: bool) -> float:
        """Seconds to the first token of ``ids``; ``cached=False`` computes the whole prompt."""
        if not cached:
            self.forget()
        start = time.perf_counter()
        if self.cpp and not cached:
            self.raw(ids, 1, cache=False)
        else:
            self.llm._decode(ids, 1, [], False)
        return time.perf_counter() - start

    def raw(self, ids: list[int], tokens: int, cache: bool = False) -> dict[str, Any]:
        """llama.cpp: one request of exactly ``tokens`` new tokens; its own timings."""
        request = {"prompt": ids, "n_predict": tokens, "ignore_eos": True, "temperature": 0, "cache_prompt": cache}
        reply = self.llm.decoder._server.handle_completions(request)
        return reply["timings"]  # type: ignore[no-any-return]

    def prefill_decode(self, ids: list[int], tokens: int) -> tuple[float, float]:
        """(prefill tokens/s of ``ids`` with nothing cached, decode tokens/s of ``tokens`` new tokens)."""
        if self.cpp:
            t = self.raw(ids, tokens)
            return t["prompt_per_second"], t["predicted_per_second"]
        seconds = self.first_token(ids, cached=False)
        decoder = self.llm.decoder
        if decoder is not None:  # ONNX: the prompt is kept, so only decoding is timed
            saved, decoder.eos_ids = decoder.eos_ids, frozenset()
            decoder.generate(ids, 1)
            start = time.perf_counter()
            new, _, _ = decoder.generate(ids, tokens + 1)
            decoder.eos_ids = saved
            return len(ids) / seconds, (len(new) - 1) / (time.perf_counter() - start)
        import torch

        model, input_ids = self.llm._model, torch.tensor([ids])
        with torch.inference_mode():
            out = model(input_ids=input_ids, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
            start = time.perf_counter()
            for _ in range(tokens):
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        return len(ids) / seconds, tokens / (time.perf_counter() - start)

    def concurrent(self, prompts: list[list[int]], tokens: int) -> float:
        """Output tokens/s of ``len(prompts)`` greedy requests made at once."""
        counts: list[int] = []

        def call(ids: list[int]) -> None:
            new, _, _ = self.llm._decode(ids, tokens, [], False)
            counts.append(len(new))

        self.forget()
        threads = [threading.Thread(target=call, args=(p,)) for p in prompts]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - start)

    def reply(self, ids: list[int], tokens: int) -> tuple[list[int], float]:
        """A greedy reply and its decode tokens/s (the prompt computed first, apart)."""
        self.llm._decode(ids, 1, [], False)
        start = time.perf_counter()
        new, _, _ = self.llm._decode(ids, tokens, [], False)
        return new, max(len(new) - 1, 1) / (time.perf_counter() - start)

    def greedy(self, ids: list[int], tokens: int) -> list[int]:
        return list(self.llm._decode(ids, tokens, [], False)[0])

    def batched_greedy(self, prompts: list[list[int]], tokens: int) -> list[list[int]]:
        """fp32's greedy replies, 8 prompts at a time (left-padded), ending at the end token as a reply does."""
        import torch

        tok, model, out = self.llm._tokenizer, self.llm._model, []
        ends = {tok.eos_token_id, tok.pad_token_id}
        for i in range(0, len(prompts), 8):
            batch = prompts[i : i + 8]
            width = max(map(len, batch))
            ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in batch])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
            with torch.inference_mode():
                gen = model.generate(
                    input_ids=ids, attention_mask=mask, max_new_tokens=tokens, do_sample=False,
                    pad_token_id=tok.pad_token_id,
                )  # fmt: skip
            for row in gen:
                reply = row[width:].tolist()
                cut = next((j for j, t in enumerate(reply) if t in ends), len(reply))
                out.append(reply[:cut])
        return out


def gguf_bytes_per_token(gguf: Path) -> float:
    """Bytes of the GGUF file a decoded token reads: every tensor but the embedding table (one row of
    it), the output layer being the embedding table again when the file has none of its own."""
    from searchain_graph.llms.llamacpp import gguf_header

    _, tensors = gguf_header(gguf)
    tied = "output.weight" not in tensors
    return float(sum(n for name, n in tensors.items() if tied or name != "token_embd.weight"))


def cold(model: str, candidate: str) -> dict[str, Any]:
    """From an empty cache to the first answer (the parent points ``SEARCHAIN_CACHE`` at an empty directory)."""
    start = time.perf_counter()
    llm = make_llm(model, candidate)
    answer = llm.invoke(f"Answer in one sentence: {README_QUESTION}").text
    return {"first_answer_s": time.perf_counter() - start, "cold_peak_rss_mb": peak_rss_mb(), "answer": answer}


def one(model: str, candidate: str, args: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    import torch  # noqa: F401  (imports are not the model's load time)
    import transformers  # noqa: F401

    bandwidth = bandwidth_gbs()
    start = time.perf_counter()
    runner = Runner(model, candidate)
    row: dict[str, Any] = {"model": model, "candidate": candidate, "load_s": time.perf_counter() - start}
    row["rss_mb"] = rss_mb()
    qs = questions(max(args.prompts, 4))
    coq = [chat_ids(runner.llm, round1(q)) for q in qs[:2]]
    row["prompt_tokens"] = len(coq[0])
    row["prefill_tok_s"], row["decode_tok_s"] = runner.prefill_decode(coq[0], args.tokens)
    # A new question after another one's round 1: the demonstrations are the shared prefix.
    row["ttft_new_question_cold_s"] = runner.first_token(coq[1], cached=False)
    runner.first_token(coq[0], cached=True)
    row["ttft_new_question_prefix_s"] = runner.first_token(coq[1], cached=True)
    # Round 2 of a question: round 1's prompt, its reply and IR's feedback.
    first = runner.greedy(coq[0], 96)
    tok = runner.llm._tokenizer
    turns = [*round1(qs[0]), ("assistant", tok.decode(first, skip_special_tokens=True)), ("user", FEEDBACK)]
    round2 = chat_ids(runner.llm, turns)
    row["ttft_round2_cold_s"] = runner.first_token(round2, cached=False)
    runner.first_token(coq[0], cached=True)
    row["ttft_round2_kept_s"] = runner.first_token(round2, cached=True)
    # Speculation's case: a reply that rewrites text already in the context.
    rewrite, row["rewrite_tok_s"] = runner.reply(round2, args.tokens)
    plain_file = scratch / f"{model}-rewrite.json"
    if candidate == "llama.cpp":
        plain_file.write_text(json.dumps(rewrite))
    if plain_file.is_file():
        row["rewrite_same_as_plain"] = json.loads(plain_file.read_text()) == rewrite
    stats = getattr(runner.llm.decoder, "stats", None)
    row["acceptance"] = getattr(stats, "acceptance", None)
    short = [chat_ids(runner.llm, [("user", f"Answer the question in one sentence: {q}")]) for q in qs]
    for n in (1, 2, 4):
        row[f"tok_s_{n}"] = runner.concurrent(short[:n], args.tokens // 2)
    per_token = gguf_bytes_per_token(runner.gguf)
    row["gguf_mb_per_token"] = per_token / 1e6
    row["bandwidth_gbs"] = bandwidth
    row["bound_fraction"] = row["decode_tok_s"] * per_token / (bandwidth * 1e9)
    prompts = short[: args.prompts]
    if candidate == "torch":
        replies = runner.batched_greedy(prompts, args.agree_tokens)
    else:
        replies = [runner.greedy(p, args.agree_tokens) for p in prompts]
    reference = scratch / f"{model}-fp32.json"
    if candidate == "torch":
        reference.write_text(json.dumps([prompts, replies]))
    if reference.is_file():
        ref_prompts, ref_replies = json.loads(reference.read_text())
        shares = []
        for mine, ref in zip(replies, ref_replies, strict=True):
            same = next(
                (i for i, (a, b) in enumerate(zip(mine, ref, strict=False)) if a != b), min(len(mine), len(ref))
            )
            shares.append(same / max(len(ref), 1))
        row["agreement"] = float(np.mean(shares)) if ref_prompts == prompts else None
        row["identical_replies"] = sum(a == b for a, b in zip(replies, ref_replies, strict=True))
    row["peak_rss_mb"] = peak_rss_mb()
    return row


def fmt(v: Any, spec: str, scale: float = 1.0) -> str:
    return "—" if v is None else format(v * scale, spec)


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | candidate | first run to first answer (s) | its peak RSS (MB) | warm load (s) | peak RSS (MB) | "
        "prefill tok/s | decode tok/s | of the bound | new question, first token: cold / prefix cached (s) | "
        "round 2, first token: cold / round 1 kept (s) | tok/s at 1 / 2 / 4 requests | rewrite tok/s | acceptance | "
        "rewrite as plain | agreement with fp32 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['model']} | {r['candidate']} | {fmt(r.get('first_answer_s'), '.1f')} | "
            f"{fmt(r.get('cold_peak_rss_mb'), '.0f')} | {r['load_s']:.1f} | {r['peak_rss_mb']:.0f} | "
            f"{r['prefill_tok_s']:.1f} ({r['prompt_tokens']}) | {r['decode_tok_s']:.2f} | "
            f"{100 * r['bound_fraction']:.0f}% ({r['gguf_mb_per_token']:.0f} MB, {r['bandwidth_gbs']:.1f} GB/s) | "
            f"{r['ttft_new_question_cold_s']:.2f} / {r['ttft_new_question_prefix_s']:.2f} | "
            f"{r['ttft_round2_cold_s']:.2f} / {r['ttft_round2_kept_s']:.2f} | "
            f"{r['tok_s_1']:.1f} / {r['tok_s_2']:.1f} / {r['tok_s_4']:.1f} | {r['rewrite_tok_s']:.2f} | "
            f"{fmt(r.get('acceptance'), '.0f', 100)}{'' if r.get('acceptance') is None else '%'} | "
            f"{ {True: 'yes', False: 'no'}.get(r.get('rewrite_same_as_plain'), '—') } | "
            f"{fmt(r.get('agreement'), '.1f', 100)}% "
            f"({r.get('identical_replies', '—')} of the replies identical) |"
        )
    return "\n".join(lines)


def run_child(command: list[str], env: dict[str, str] | None = None) -> dict[str, Any] | None:
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    found = [line[4:] for line in done.stdout.splitlines() if line.startswith("ROW ")]
    if done.returncode != 0 or not found:
        print(f"{' '.join(command[2:])}: failed\n{done.stderr[-2000:]}", flush=True)
        return None
    return json.loads(found[0])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen2.5-coder-1.5b")
    parser.add_argument("--candidates", default="torch,onnx-int4,llama.cpp,llama.cpp+ngram,llama.cpp+draft")
    parser.add_argument("--cold", action="store_true", help="also time each candidate's first run from an empty cache")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prompts", type=int, default=100, help="dev questions for the agreement figure")
    parser.add_argument("--agree-tokens", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None, help="also append the rows (JSON lines) here")
    parser.add_argument("--one", nargs=3, metavar=("MODEL", "CANDIDATE", "SCRATCH"), help=argparse.SUPPRESS)
    parser.add_argument("--cold-one", nargs=2, metavar=("MODEL", "CANDIDATE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.cold_one:
        print("ROW " + json.dumps(cold(*args.cold_one)), flush=True)
        return
    if args.one:
        print("ROW " + json.dumps(one(args.one[0], args.one[1], args, Path(args.one[2]))), flush=True)
        return
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for model in args.models.split(","):
            for candidate in args.candidates.split(","):
                row: dict[str, Any] = {}
                if args.cold and candidate != "torch":
                    with tempfile.TemporaryDirectory(dir=Path.home() / ".cache") as empty:
                        env = {**os.environ, "SEARCHAIN_CACHE": empty}
                        row |= run_child([sys.executable, __file__, "--cold-one", model, candidate], env) or {}
                command = [sys.executable, __file__, "--one", model, candidate, scratch, "--tokens", str(args.tokens)]
                command += ["--prompts", str(args.prompts), "--agree-tokens", str(args.agree_tokens)]
                warm = run_child(command)
                if warm is None:
                    continue
                rows.append(row | warm)
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}))
                if args.out:
                    with args.out.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(rows[-1]) + "\n")
    print("\n" + table(rows))


if __name__ == "__main__":
    main()
