"""SmolLM2 behind ``transformers serve``: start time, tokens/s for 1 and 8 requests, greedy agreement.

The server is started from the package's own weights (``searchain model-dir``), once per mode
(plain, then ``--continuous-batching``), on 127.0.0.1. Each mode answers SearChain's first-round
CoQ prompt for HotpotQA questions through ``ChatOpenAI`` (what ``--model openai:...`` builds):

* start: seconds from launching the server to its first answer;
* one request at a time, then 8 at once: completion tokens/s as the server counts them;
* agreement: how many replies equal, character for character, the reply the same prompt got from
  the in-process ``TransformersChatModel`` (greedy both; the fp32 reference of this package).

    python benchmarks/llm_server.py --questions 8 --max-tokens 96
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
from langchain_core.messages import HumanMessage

from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.loading import load_chat_model
from searchain_graph.llms.weights import plain_weights_dir
from searchain_graph.method.prompts import COQ_PROMPTS

ROOT = Path(__file__).resolve().parents[1]


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def _prompts(n: int) -> list[str]:
    with (ROOT / "examples/data/hotpotqa_dev20_questions.jsonl").open(encoding="utf-8") as handle:
        questions = [json.loads(line)["question_text"] for line in handle][:n]
    return [COQ_PROMPTS["multihop"].format(question=q) for q in questions]


def _ask(llm: Any, prompts: list[str], workers: int) -> tuple[list[str], int, float]:
    """Replies, completion tokens and seconds for ``prompts``, ``workers`` at once."""
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        replies = list(pool.map(lambda p: llm.invoke([HumanMessage(p)]), prompts))
    seconds = time.perf_counter() - started
    tokens = sum(int((r.usage_metadata or {}).get("output_tokens", 0)) for r in replies)
    return [r.text for r in replies], tokens, seconds


def _mode(directory: str, prompts: list[str], reference: list[str], max_tokens: int, batching: bool) -> dict[str, Any]:
    port = _port()
    cmd = [str(Path(sys.executable).parent / "transformers"), "serve", directory, "--host", "127.0.0.1"]
    cmd += ["--port", str(port), "--device", "cpu"] + (["--continuous-batching"] if batching else [])
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    quiet = subprocess.DEVNULL
    server = subprocess.Popen(cmd, env=env, stdout=quiet, stderr=quiet, start_new_session=True)
    try:
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"transformers serve exited with {server.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).is_success:
                    break
            except httpx.TransportError:
                time.sleep(0.25)
        os.environ["OPENAI_BASE_URL"] = f"http://127.0.0.1:{port}/v1"
        llm = load_chat_model(f"openai:{directory}", max_new_tokens=max_tokens)
        llm.invoke("Hello")
        start = time.perf_counter() - started
        one, one_tokens, one_s = _ask(llm, prompts, 1)
        many, many_tokens, many_s = _ask(llm, prompts, 8)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    return {
        "mode": "continuous batching" if batching else "plain",
        "start_s": round(start, 1),
        "tokens_per_s_1": round(one_tokens / one_s, 1),
        "tokens_per_s_8": round(many_tokens / many_s, 1),
        "agree_1": sum(a == b for a, b in zip(one, reference, strict=True)),
        "agree_8": sum(a == b for a, b in zip(many, reference, strict=True)),
        "prompts": len(prompts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--questions", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=96)
    args = parser.parse_args()
    smollm2 = TransformersChatModel.from_smollm2(max_new_tokens=args.max_tokens).load()
    directory = str(plain_weights_dir(smollm2.model_path, smollm2.gguf_file))
    prompts = _prompts(args.questions)
    reference, ref_tokens, ref_s = _ask(smollm2, prompts, 1)
    print(f"in process (TransformersChatModel, fp32): {ref_tokens / ref_s:.1f} tokens/s, one request at a time")
    del smollm2
    print("| server | start (s) | tokens/s, 1 at a time | tokens/s, 8 at once | equal to in-process, 1 / 8 |")
    print("|---|---:|---:|---:|---:|")
    for batching in (False, True):
        r = _mode(directory, prompts, reference, args.max_tokens, batching)
        print(
            f"| {r['mode']} | {r['start_s']} | {r['tokens_per_s_1']} | {r['tokens_per_s_8']} | "
            f"{r['agree_1']}/{r['prompts']} / {r['agree_8']}/{r['prompts']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
