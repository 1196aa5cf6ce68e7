"""Speed and fidelity of the offline LLMs, each backend against its fp32 reference, in one run.

For each model (``--models``: the packaged Qwen2.5-Coder models, or ``smollm2``) and each backend
(``--backends``; the first is the reference, ``torch`` = fp32 in transformers), in a process of
its own so that load time and peak memory are its own:

* warm load (the conversions are cached; ``--cold`` converts again into an empty cache and reports
  that time as the first conversion), resident memory after loading, peak resident memory;
* decode tokens/s of one greedy request (``--tokens`` new tokens, end of text ignored), and output
  tokens/s of 8 concurrent ``invoke`` calls;
* prefill tokens/s: the paper's multi-hop Chain-of-Query prompt for a HotpotQA question, cold;
* first token of a round-2 prompt (round 1's prompt, its reply, IR's feedback), cold and with
  round 1 already computed (what the prefix cache keeps from round to round of a question);
* decode as a share of the memory-bandwidth bound: weight bytes read per token (every weight but
  the embedding table, of which one row is read) times tokens/s, over the bandwidth measured in
  the same process (numpy sums over 256 MB, one per core, concurrently);
* agreement with fp32 by teacher forcing: along fp32's own greedy continuation (``--agree-tokens``)
  of ``--prompts`` HotpotQA dev questions, the share of positions where the backend's argmax is
  fp32's token (fp32 against itself, full forward vs KV-cached decoding, is the noise floor).

``llama-cpp`` runs the same GGUF file in llama.cpp (``pip install llama-cpp-python``, compiled
from source) as a peer: load, decode, prefill and agreement; no concurrent figure (its Python API
decodes one sequence).

    OMP_NUM_THREADS=2 python benchmarks/llm_speed.py --models qwen2.5-coder-1.5b,qwen2.5-coder-0.5b \\
        --backends torch,onnx-int4,onnx-int4-requantised,llama-cpp --prompts 100 --agree-tokens 16
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
FEEDBACK = (
    "According to the Reference, the answer for Who is the performer of Spirit If...? should be Kevin Drew, "
    "you can change your answer and continue constructing the reasoning chain."
)


def questions(n: int) -> list[str]:
    path = DATA if DATA.is_file() else FALLBACK
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out.append(record.get("question_text") or record.get("question"))
    return [q for q in out if q][:n]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


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


class Runner:
    """One backend of one model behind the same few calls."""

    def __init__(self, model: str, backend: str) -> None:
        from searchain_graph.llms.chat_model import TransformersChatModel

        self.backend = backend
        kind = "onnx-int4" if backend == "llama-cpp" else backend
        if model == "smollm2":
            self.llm = TransformersChatModel.from_smollm2(backend=kind, max_new_tokens=64, max_batch_size=8)
        else:
            self.llm = TransformersChatModel.from_packaged(model, backend=kind, max_new_tokens=64, max_batch_size=8)
        self.gguf = Path(self.llm.model_path) / str(self.llm.gguf_file)
        if backend == "llama-cpp":
            from llama_cpp import Llama
            from transformers import AutoTokenizer

            from searchain_graph.llms.weights import dequantized_dir

            self.llm._tokenizer = AutoTokenizer.from_pretrained(dequantized_dir(self.gguf))
            self.cpp = Llama(
                model_path=str(self.gguf), n_ctx=4096, n_threads=2, n_threads_batch=2, logits_all=True, verbose=False
            )
        else:
            self.llm.load()

    def ids(self, text: str | list[Any]) -> list[int]:
        from langchain_core.messages import HumanMessage

        from searchain_graph.llms.tool_calls import chat_messages

        return self.llm._encode(chat_messages([HumanMessage(text)] if isinstance(text, str) else text))

    def decode(self, ids: list[int], tokens: int) -> float:
        """Tokens/s of one greedy request of exactly ``tokens`` new tokens."""
        if self.backend == "llama-cpp":
            self.cpp.reset()
            self.cpp.eval(ids)
            start, n = time.perf_counter(), 0
            for _ in self.cpp.generate([], temp=0.0, reset=False):
                n += 1
                if n >= tokens:
                    break
            return n / (time.perf_counter() - start)
        decoder = self.llm._genai
        if decoder is not None:
            saved, decoder.eos_ids = decoder.eos_ids, frozenset()
            decoder.generate(ids, 4)
            decoder._kept.clear()
            decoder.generate(ids, 1)  # the prompt is kept: only decoding is timed
            start = time.perf_counter()
            new, _, _ = decoder.generate(ids, tokens + 1)
            decoder.eos_ids = saved
            return (len(new) - 1) / (time.perf_counter() - start)
        import torch

        model, input_ids = self.llm._model, torch.tensor([ids])
        with torch.inference_mode():
            out = model(input_ids=input_ids, use_cache=True)
            past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
            start = time.perf_counter()
            for _ in range(tokens):
                out = model(input_ids=nxt, past_key_values=past, use_cache=True)
                past, nxt = out.past_key_values, out.logits[:, -1:].argmax(-1)
        return tokens / (time.perf_counter() - start)

    def prefill(self, ids: list[int]) -> float:
        """Seconds to the first token of ``ids``, nothing kept."""
        if self.backend == "llama-cpp":
            self.cpp.reset()
            start = time.perf_counter()
            self.cpp.eval(ids)
            return time.perf_counter() - start
        if self.llm._genai is not None:
            self.llm._genai._kept.clear()
        self.llm._engine = None
        start = time.perf_counter()
        self.llm._decode(ids, 1, [], False)
        return time.perf_counter() - start

    def concurrent(self, prompts: list[str]) -> float | None:
        if self.backend == "llama-cpp":
            return None
        counts: list[int] = []

        def call(text: str) -> None:
            reply = self.llm.invoke(text)
            counts.append(int((reply.usage_metadata or {}).get("output_tokens", 0)))

        threads = [threading.Thread(target=call, args=(p,)) for p in prompts]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(counts) / (time.perf_counter() - start)

    def first_token(self, round1: str) -> tuple[float, float | None]:
        """Round 2's first token: cold, then with round 1 computed before it."""
        from langchain_core.messages import AIMessage, HumanMessage

        reply = self.llm.invoke(round1, max_new_tokens=48).text if self.backend != "llama-cpp" else "[Query 1]:"
        round2 = self.ids([HumanMessage(round1), AIMessage(reply), HumanMessage(FEEDBACK)])
        cold = self.prefill(round2)
        if self.backend == "llama-cpp":
            return cold, None
        self.prefill(self.ids(round1))  # round 1 computed (and kept)
        start = time.perf_counter()
        self.llm._decode(round2, 1, [], False)
        return cold, time.perf_counter() - start

    def weight_bytes(self) -> float:
        """Bytes of weights read per decoded token: all but the embedding table."""
        if self.backend == "llama-cpp":
            import gguf

            tensors = gguf.GGUFReader(str(self.gguf)).tensors
            tied = all(t.name != "output.weight" for t in tensors)  # the embedding is then the output layer
            return float(sum(int(t.n_bytes) for t in tensors if tied or t.name != "token_embd.weight"))
        if self.llm._genai is not None:
            import onnx

            graph = onnx.load(str(Path(self.llm._genai.model_dir) / "model.onnx"), load_external_data=False).graph
            sizes = {}
            for init in graph.initializer:
                length = next((int(e.value) for e in init.external_data if e.key == "length"), 0)
                sizes[init.name] = length or len(init.raw_data)
            return float(sum(v for k, v in sizes.items() if "embed_tokens" not in k))
        model = self.llm._model
        embedding = model.get_input_embeddings().weight
        return float(sum(p.numel() * p.element_size() for p in model.parameters() if p is not embedding))

    def generate_reference(self, prompts: list[list[int]], tokens: int) -> list[list[int]]:
        """fp32's greedy continuations, 8 prompts at a time (left-padded)."""
        import torch

        tok, model, out = self.llm._tokenizer, self.llm._model, []
        for i in range(0, len(prompts), 8):
            batch = prompts[i : i + 8]
            width = max(map(len, batch))
            ids = torch.tensor([[tok.pad_token_id] * (width - len(p)) + p for p in batch])
            mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in batch])
            with torch.inference_mode():
                gen = model.generate(
                    input_ids=ids, attention_mask=mask, max_new_tokens=tokens, min_new_tokens=tokens,
                    do_sample=False, pad_token_id=tok.pad_token_id,
                )  # fmt: skip
            out += [row[width:].tolist() for row in gen]
        return out

    def forced_argmax(self, prompt: list[int], continuation: list[int]) -> np.ndarray:
        if self.backend == "llama-cpp":
            self.cpp.reset()
            self.cpp.eval(prompt + continuation)
            scores = np.asarray(self.cpp.scores[: len(prompt) + len(continuation)])
            return scores[len(prompt) - 1 : -1].argmax(-1)
        if self.llm._genai is not None:
            return self.llm._genai.forced_logits(prompt, continuation).argmax(-1)
        import torch

        with torch.inference_mode():
            logits = self.llm._model(input_ids=torch.tensor([prompt + continuation])).logits[0]
        return logits[len(prompt) - 1 : -1].argmax(-1).numpy()


def one(model: str, backend: str, args: argparse.Namespace, reference_file: Path) -> dict[str, Any]:
    import onnxruntime_genai  # noqa: F401  (imports are not the model's load time)
    import torch  # noqa: F401
    import transformers  # noqa: F401

    from searchain_graph.method.prompts import COQ_PROMPTS

    bandwidth = bandwidth_gbs()
    start = time.perf_counter()
    runner = Runner(model, backend)
    row: dict[str, Any] = {"model": model, "backend": backend, "load_s": time.perf_counter() - start}
    row["rss_mb"] = rss_mb()
    qs = questions(max(args.prompts, 8))
    short = [f"Answer the question in one sentence: {q}" for q in qs]
    coq = COQ_PROMPTS["multihop"].format(question=qs[0])
    row["tok_s_1"] = runner.decode(runner.ids(short[0]), args.tokens)
    row["tok_s_8"] = runner.concurrent(short[:8])
    coq_ids = runner.ids(coq)
    seconds = runner.prefill(coq_ids)
    row["prefill_tokens"], row["prefill_tok_s"] = len(coq_ids), len(coq_ids) / seconds
    row["ttft_cold_s"], row["ttft_prefix_s"] = runner.first_token(coq)
    row["weights_mb"] = runner.weight_bytes() / 1e6
    row["bandwidth_gbs"] = bandwidth
    row["bound_fraction"] = row["tok_s_1"] * runner.weight_bytes() / (bandwidth * 1e9)
    prompts = [runner.ids(s) for s in short[: args.prompts]]
    if not reference_file.is_file():
        if backend != "torch":
            raise SystemExit("the first backend must be torch: it writes the fp32 reference")
        reference_file.write_text(json.dumps([prompts, runner.generate_reference(prompts, args.agree_tokens)]))
    ref_prompts, continuations = json.loads(reference_file.read_text())
    agree = [runner.forced_argmax(p, c) == np.array(c) for p, c in zip(ref_prompts, continuations, strict=True)]
    row["agreement"] = float(np.concatenate(agree).mean())
    row["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return row


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | backend | warm load (s) | RSS (MB) | peak RSS (MB) | weights read a token (MB) | tok/s, 1 request | "
        "tok/s, 8 concurrent | prefill tok/s | first token, cold (s) | first token, round 1 kept (s) | "
        "of the bandwidth bound | agreement with fp32 |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def f(v: Any, fmt: str) -> str:
        return "—" if v is None else format(v, fmt)

    for r in rows:
        lines.append(
            f"| {r['model']} | {r['backend']} | {r['load_s']:.2f} | {r['rss_mb']:.0f} | {r['peak_rss_mb']:.0f} | "
            f"{r['weights_mb']:.0f} | {r['tok_s_1']:.1f} | {f(r['tok_s_8'], '.1f')} | {r['prefill_tok_s']:.1f} "
            f"({r['prefill_tokens']} tokens) | {r['ttft_cold_s']:.2f} | {f(r['ttft_prefix_s'], '.2f')} | "
            f"{100 * r['bound_fraction']:.0f}% ({r['bandwidth_gbs']:.1f} GB/s) | {100 * r['agreement']:.1f}% |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen2.5-coder-1.5b,qwen2.5-coder-0.5b")
    parser.add_argument("--backends", default="torch,onnx-int4,onnx-int4-requantised,llama-cpp")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prompts", type=int, default=100, help="questions for the agreement figure")
    parser.add_argument("--agree-tokens", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None, help="also append the rows (JSON lines) here")
    parser.add_argument("--one", nargs=3, metavar=("MODEL", "BACKEND", "REFERENCE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print("ROW " + json.dumps(one(args.one[0], args.one[1], args, Path(args.one[2]))), flush=True)
        return
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for model in args.models.split(","):
            reference = Path(scratch) / f"{model}.json"
            for backend in args.backends.split(","):
                command = [sys.executable, __file__, "--one", model, backend, str(reference)]
                command += ["--tokens", str(args.tokens), "--prompts", str(args.prompts)]
                command += ["--agree-tokens", str(args.agree_tokens)]
                done = subprocess.run(command, capture_output=True, text=True, check=False)
                found = [line[4:] for line in done.stdout.splitlines() if line.startswith("ROW ")]
                if done.returncode != 0 or not found:
                    print(f"{model} {backend}: failed\n{done.stderr[-2000:]}", flush=True)
                    continue
                rows.append(json.loads(found[0]))
                print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in rows[-1].items()}))
                if args.out:
                    with args.out.open("a", encoding="utf-8") as handle:
                        handle.write(json.dumps(rows[-1]) + "\n")
    print("\n" + table(rows))


if __name__ == "__main__":
    main()
