"""Speed of the offline LLM, side by side in one process: PyTorch fp32 against ONNX Runtime GenAI.

For SmolLM2-135M-Instruct (the offline default), each backend in turn:

* warm load time (the conversions are cached; the first run converts once) and resident memory;
* decoding tokens/s for one request (greedy, ``--tokens`` new tokens, no early end);
* tokens/s for 8 concurrent requests (PyTorch: the continuous-batching ``BatchEngine``; ONNX:
  requests take turns);
* time to first token of a round-2 Chain-of-Query prompt (the paper's multi-hop prompt, the reply,
  IR's feedback), cold and with round 1 already computed (the prefix cache). The paper's prompt
  puts the question before the demonstrations, so questions share only ~40 prompt tokens: what a
  prefix cache saves is the conversation of one question from round to round;
* decode speed as a fraction of the memory-bandwidth bound: weight bytes read per token times
  tokens/s, over the bandwidth measured in this run (numpy sum over 256 MB, one thread);
* agreement with fp32 (teacher forcing): along fp32's own greedy continuation of ``--prompts``
  questions, the share of positions where the backend's argmax is fp32's token.

    OMP_NUM_THREADS=2 python benchmarks/llm_speed.py --prompts 100 --agree-tokens 32
"""

from __future__ import annotations

import argparse
import json
import resource
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from langchain_core.messages import AIMessage, HumanMessage

from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.onnx_genai import default_threads
from searchain_graph.method.prompts import COQ_PROMPTS

DATA = Path(__file__).resolve().parents[2] / "shared/data/hotpotqa/ircot_dev_subsampled.first200.jsonl"
FEEDBACK = (
    "According to the Reference, the answer for Who is the performer of Spirit If...? should be Kevin Drew, "
    "you can change your answer and continue constructing the reasoning chain."
)
FALLBACK = Path(__file__).resolve().parents[1] / "examples/data/hotpotqa_dev20_questions.jsonl"


def questions(n: int) -> list[str]:
    path = DATA if DATA.is_file() else FALLBACK
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        out.append(record.get("question_text") or record.get("question"))
    return [q for q in out if q][:n]


def rss_mb() -> float:
    """Resident memory now (MB)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def bandwidth_gbs() -> float:
    data = np.ones(256 * 2**20 // 8)
    data.sum()
    start = time.perf_counter()
    for _ in range(5):
        data.sum()
    return 5 * data.nbytes / (time.perf_counter() - start) / 1e9


def chat_ids(llm: TransformersChatModel, text: str) -> list[int]:
    return llm._encode([{"role": "user", "content": text}])


def decode_speed(llm: TransformersChatModel, ids: list[int], tokens: int) -> float:
    """Tokens/s of one greedy request of exactly ``tokens`` new tokens (end of text ignored)."""
    if llm._genai is not None:
        decoder = llm._genai
        saved, decoder.eos_ids = decoder.eos_ids, frozenset()
        decoder.generate(ids, 4)
        start = time.perf_counter()
        new, _, _ = decoder.generate(ids, tokens)
        decoder.eos_ids = saved
        return len(new) / (time.perf_counter() - start)
    model, input_ids = llm._model, torch.tensor([ids])
    kwargs = {
        "do_sample": False,
        "pad_token_id": llm._tokenizer.pad_token_id,
        "attention_mask": torch.ones_like(input_ids),
    }
    with torch.inference_mode():
        model.generate(input_ids=input_ids, max_new_tokens=4, **kwargs)
        start = time.perf_counter()
        out = model.generate(input_ids=input_ids, max_new_tokens=tokens, min_new_tokens=tokens, **kwargs)
    return (out.shape[1] - len(ids)) / (time.perf_counter() - start)


def concurrent_speed(llm: TransformersChatModel, prompts: list[str]) -> float:
    """Output tokens/s of concurrent ``invoke`` calls, one thread each."""
    counts: list[int] = []

    def call(text: str) -> None:
        reply = llm.invoke(text)
        counts.append(int((reply.usage_metadata or {}).get("output_tokens", 0)))

    threads = [threading.Thread(target=call, args=(p,)) for p in prompts]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sum(counts) / (time.perf_counter() - start)


def first_token_seconds(llm: TransformersChatModel, round1: str) -> tuple[float, float]:
    """Time to first token of a round-2 Chain-of-Query prompt (round 1's prompt, its reply and IR's
    feedback): cold, then with round 1 already computed (the conversation's prefix kept)."""
    reply = llm.invoke(round1, max_new_tokens=32).text
    round2 = [HumanMessage(round1), AIMessage(reply), HumanMessage(FEEDBACK)]
    timings = []
    for warm in (False, True):
        if llm._genai is not None:
            llm._genai._kept.clear()
        elif llm._engine is not None:
            llm._engine = None  # a new engine: an empty prefix cache
        if warm:
            llm.invoke(round1, max_new_tokens=32)
        start = time.perf_counter()
        llm.invoke(round2, max_new_tokens=1)
        timings.append(time.perf_counter() - start)
    return timings[0], timings[1]


def weight_bytes(llm: TransformersChatModel) -> float:
    """Bytes of weights read per decoded token (the embedding table is read one row a token, except
    where it is also the output layer)."""
    if llm._genai is not None:
        onnx_dir = Path(llm._genai.model_dir)
        return float(sum(p.stat().st_size for p in onnx_dir.glob("*.onnx*")))
    model = llm._model
    return float(sum(p.numel() * p.element_size() for p in model.parameters()))


def forced_argmax(llm: TransformersChatModel, prompt: list[int], continuation: list[int]) -> np.ndarray:
    if llm._genai is not None:
        return llm._genai.forced_logits(prompt, continuation).argmax(-1)
    with torch.inference_mode():
        logits = llm._model(input_ids=torch.tensor([prompt + continuation])).logits[0]
    return logits[len(prompt) - 1 : -1].argmax(-1).numpy()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="torch,onnx-int4", help="comma-separated; the first is the reference")
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prompts", type=int, default=100, help="questions for the agreement figure")
    parser.add_argument("--agree-tokens", type=int, default=32)
    args = parser.parse_args()

    bandwidth = bandwidth_gbs()
    print(
        f"memory bandwidth (numpy sum, one thread): {bandwidth:.1f} GB/s; torch threads {torch.get_num_threads()}; "
        f"ONNX Runtime threads {default_threads()}"
    )
    qs = questions(max(args.prompts, 8))
    coq = [COQ_PROMPTS["multihop"].format(question=q) for q in qs[:2]]
    short = [f"Answer the question in one sentence: {q}" for q in qs]
    rows, reference = [], None
    for name in args.backends.split(","):
        before = rss_mb()
        start = time.perf_counter()
        llm = TransformersChatModel.from_smollm2(backend=name, max_new_tokens=64, max_batch_size=8).load()
        load = time.perf_counter() - start
        loaded = rss_mb() - before
        ids = chat_ids(llm, short[0])
        one = decode_speed(llm, ids, args.tokens)
        eight = concurrent_speed(llm, short[:8])
        cold, warm = first_token_seconds(llm, coq[0])
        bound = bandwidth * 1e9 / weight_bytes(llm)
        row: dict[str, Any] = {
            "backend": name,
            "load_s": load,
            "rss_mb": loaded,
            "tok_s_1": one,
            "tok_s_8": eight,
            "ttft_cold_s": cold,
            "ttft_prefix_s": warm,
            "weights_mb": weight_bytes(llm) / 1e6,
            "bound_fraction": one / bound,
        }
        prompts = [chat_ids(llm, s) for s in short[: args.prompts]]
        if reference is None:
            reference = []
            for p in prompts:
                new, _, _ = llm._decode(p, args.agree_tokens, [], False) if llm._genai else (None, None, None)
                if new is None:
                    with torch.inference_mode():
                        out = llm._model.generate(
                            input_ids=torch.tensor([p]),
                            attention_mask=torch.ones(1, len(p), dtype=torch.long),
                            max_new_tokens=args.agree_tokens,
                            min_new_tokens=args.agree_tokens,
                            do_sample=False,
                            pad_token_id=llm._tokenizer.pad_token_id,
                        )
                    new = out[0, len(p) :].tolist()
                reference.append((p, new))
        agree = [forced_argmax(llm, p, cont) == np.array(cont) for p, cont in reference]
        row["agreement"] = float(np.concatenate(agree).mean())
        rows.append(row)
        print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}), flush=True)
        del llm
    base = rows[0]
    print(
        "\n| backend | warm load (s) | RSS of the loaded model (MB) | weights (MB) | tok/s, 1 request | "
        "tok/s, 8 concurrent | first token, cold (s) | first token, prefix kept (s) | of the bandwidth bound | "
        "agreement with fp32 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['backend']} | {r['load_s']:.2f} | {r['rss_mb']:.0f} | {r['weights_mb']:.0f} | "
            f"{r['tok_s_1']:.1f} ({r['tok_s_1'] / base['tok_s_1']:.2f}x) | {r['tok_s_8']:.1f} "
            f"({r['tok_s_8'] / base['tok_s_8']:.2f}x) | {r['ttft_cold_s']:.2f} | {r['ttft_prefix_s']:.2f} | "
            f"{100 * r['bound_fraction']:.0f}% | {100 * r['agreement']:.1f}% |"
        )


if __name__ == "__main__":
    main()
