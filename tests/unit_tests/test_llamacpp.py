"""The llama.cpp backend on SmolLM2's GGUF file: no conversion, the prompt cache, speculation, bounds."""

from __future__ import annotations

import logging
import shutil
import threading
from pathlib import Path
from typing import Any

import pytest

from searchain_graph.llms.chat_model import TransformersChatModel
from searchain_graph.llms.llamacpp import (
    ContextLengthError,
    LlamaCppConfig,
    LlamaCppDecoder,
    gguf_header,
    gguf_tokenizer,
    train_context,
)

SYSTEM = "You answer questions about people, places and films in one short sentence. " * 4
SMOLLM2_FP32_BYTES = 134_515_008 * 4
"""SmolLM2-135M's weights in fp32 (its parameter count times four bytes)."""


@pytest.fixture(scope="module")
def plain(gguf: Path, tokenizer: Any) -> LlamaCppDecoder:
    return LlamaCppDecoder(gguf, LlamaCppConfig(context=1024), special_ids=[tokenizer.eos_token_id])


def chat(tokenizer: Any, question: str) -> list[int]:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"])


def shared_prefix(a: list[int], b: list[int]) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def test_a_second_question_prefills_only_its_own_tokens(gguf: Path, tokenizer: Any) -> None:
    decoder = LlamaCppDecoder(gguf, LlamaCppConfig(context=1024), special_ids=[tokenizer.eos_token_id])
    first, second = chat(tokenizer, "Where was Kevin Drew born?"), chat(tokenizer, "Who directed the film Heat?")
    common = shared_prefix(first, second)
    assert 60 < common < len(second)  # the system prompt and the template's turn header
    decoder.generate(first, 8)
    decoder.generate(second, 8)
    stats = decoder.stats  # llama.cpp's own counters: tokens it took from its cache
    assert stats.per_call_reuse == [0, common]
    assert (stats.calls, stats.prompt_tokens, stats.reused_tokens) == (2, len(first) + len(second), common)
    # A round continues its conversation: the reply and the next turn are all it computes.
    reply, _, _ = decoder.generate(second, 8)
    round2 = second + reply + tokenizer.encode("\nAre you sure?")
    decoder.generate(round2, 4)
    assert stats.per_call_reuse[-1] >= len(second) + len(reply) - 1


def test_a_reply_our_stop_check_ends_is_reused_and_counted(gguf: Path, tokenizer: Any) -> None:
    """llama.cpp sends no timings to a stream we cancel; the slot still holds its tokens."""
    decoder = LlamaCppDecoder(gguf, LlamaCppConfig(context=1024), special_ids=[tokenizer.eos_token_id])
    first = chat(tokenizer, "Describe the city of Toronto in five long sentences.")
    cut, _, finish = decoder.generate(first, 64, stop=lambda got: len(got) >= 3)
    assert (len(cut), finish) == (3, "stop")
    second = first + cut + tokenizer.encode(" and more")
    again, _, finish = decoder.generate(second, 64, stop=lambda got: len(got) >= 3)
    assert (len(again), finish) == (3, "stop")
    assert decoder.stats.per_call_reuse[-1] == len(first) + len(cut)  # counted from what the slot held
    # llama.cpp's own counter on a call it finishes: the stopped calls' prompts and replies were kept.
    decoder.generate(second + again + tokenizer.encode(" Yes."), 2)
    assert decoder.stats.per_call_reuse[-1] >= len(second) + len(again) - 1


def test_replies_end_at_the_end_token_or_a_stop_check(plain: LlamaCppDecoder, tokenizer: Any) -> None:
    ids = chat(tokenizer, "Where was Barack Obama born?")
    new, lps, finish = plain.generate(ids, 64, logprobs=True)
    assert new and len(lps) == len(new) and all(lp <= 0 for lp in lps)
    assert finish == "stop" and tokenizer.eos_token_id not in new
    cut, _, finish = plain.generate(ids, 64, stop=lambda got: len(got) >= 3)
    assert (cut, finish) == (new[:3], "stop")
    short, lps, finish = plain.generate(ids, 2)
    assert (short, lps, finish) == (new[:2], [], "length")


def test_a_prompt_over_the_context_is_refused_naming_both_lengths(gguf: Path) -> None:
    llm = TransformersChatModel.from_smollm2(context_length=64, max_new_tokens=200)
    with pytest.raises(ContextLengthError, match=r"the prompt is \d{3} tokens, and the model's context holds 64"):
        llm.invoke("Kevin Drew " * 60)
    # A prompt that fits gets what room is left: the reply stops at the context's end.
    reply = llm.invoke("Tell me a long story about Toronto.")
    usage = reply.usage_metadata
    assert usage is not None and usage["input_tokens"] + usage["output_tokens"] <= 64
    with pytest.raises(ValueError, match="at least 1"):
        llm.decoder.generate([1, 2], 0)
    with pytest.raises(RuntimeError, match="invalid tokens"):
        llm.decoder.generate([1, 2, 10**7], 2)  # refused by llama.cpp, and the decoder still works after it
    assert llm.decoder.generate([1, 2, 3], 2)[0]


def test_ngram_speculation_keeps_the_greedy_reply(gguf: Path, tokenizer: Any, plain: LlamaCppDecoder) -> None:
    """Prompt lookup drafts; the model verifies the drafted tokens in a batch. A batch's kernels may
    round differently from one token's, so a reply may differ only where the plain reply's two
    likeliest tokens nearly tie."""
    encode = lambda text: list(tokenizer.encode(text, add_special_tokens=False))  # noqa: E731
    config = LlamaCppConfig(context=1024, speculation="ngram")
    spec = LlamaCppDecoder(gguf, config, special_ids=[tokenizer.eos_token_id], encode=encode)
    chain = "[Query 1]: Who is the performer of Spirit If...?\n[Answer 1]: Kevin Drew.\n"
    chain += "[Query 2]: Where was Kevin Drew born?\n[Answer 2]: Toronto.\n[Final Content]: Toronto."
    prompts = [
        chat(tokenizer, f"Copy this text exactly:\n{chain}"),
        chat(tokenizer, f"Here is a chain:\n{chain}\nWrite it again with Answer 2 changed to Montreal."),
    ]
    for ids in prompts:
        request = {"prompt": ids, "n_predict": 48, "n_probs": 2, "temperature": 0, "cache_prompt": False}
        steps = plain._server.handle_completions(request)["choices"][0]["logprobs"]["content"]
        want = [step["id"] for step in steps if step["id"] != tokenizer.eos_token_id]
        got, _, _ = spec.generate(ids, 48)
        if tokenizer.decode(got) != tokenizer.decode(want):
            at = shared_prefix(want, got)
            top = steps[at]["top_logprobs"]
            assert [t["id"] for t in top] == [want[at], got[at]], (want, got)
            assert top[0]["logprob"] - top[1]["logprob"] < 0.25, top
    assert spec.stats.drafted_tokens > 0 and spec.stats.acceptance is not None
    with pytest.raises(ValueError, match="not reported with speculative decoding"):
        spec.generate(prompts[0], 4, logprobs=True)


def test_sampled_replies_follow_the_seed(plain: LlamaCppDecoder, tokenizer: Any) -> None:
    ids = chat(tokenizer, "Name a city.")
    # A prompt computed afresh and one read from the prompt cache give logits that differ in the
    # last bits, which a sampled token may follow: the first call caches the prompt, so that the
    # calls compared below start from one state.
    plain.generate(ids, 1, temperature=1.2, seed=7)
    one = plain.generate(ids, 12, temperature=1.2, seed=7)[0]
    assert plain.generate(ids, 12, temperature=1.2, seed=7)[0] == one
    assert any(plain.generate(ids, 12, temperature=1.2, seed=s)[0] != one for s in (8, 9, 10))


def test_concurrent_calls_decode_in_their_own_slots(gguf: Path) -> None:
    llm = TransformersChatModel.from_smollm2(max_batch_size=2, max_new_tokens=12)
    questions = ["Where was Kevin Drew born?", "Who directed the film Heat?"]
    alone = [llm.invoke(q).text for q in questions]
    together: dict[str, str] = {}

    def ask(q: str) -> None:
        together[q] = llm.invoke(q).text

    threads = [threading.Thread(target=ask, args=(q,)) for q in questions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(together[q].strip() for q in questions)
    assert sum(together[q] == a for q, a in zip(questions, alone, strict=True)) >= 1
    assert llm.decoder.stats.calls == 4


def test_the_first_run_converts_nothing(gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From an empty cache: the GGUF file is read as it is; no step dequantises it into fp32 weights."""
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path))

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the llama.cpp path must not build transformers or fp32 weights")

    monkeypatch.setattr("searchain_graph.llms.weights.load_transformers", refuse)
    monkeypatch.setattr("searchain_graph.llms.chat_model.load_transformers", refuse)
    monkeypatch.setattr("transformers.AutoModelForCausalLM.from_pretrained", refuse)
    before = resident_bytes()
    llm = TransformersChatModel.from_smollm2(max_new_tokens=8).load()
    grown = resident_bytes() - before
    assert llm.invoke("Where was Kevin Drew born?").text.strip()
    assert grown < SMOLLM2_FP32_BYTES / 2, grown  # the file (90 MB) mapped, a KV cache; no fp32 copy (538 MB)
    assert list((tmp_path / "tokenizers").iterdir())  # the one thing written: the tokenizer's conversion
    assert not (tmp_path / "dequantized").exists() and not (tmp_path / "onnx").exists()


def test_two_first_runs_caching_the_tokenizer_at_once_warn_of_nothing(
    gguf: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The run that loses the race finds the winner's copy: no warning, no partial left behind.

    A cache that cannot be written at all is still a warning, and the tokenizer is still returned.
    """
    from transformers import PreTrainedTokenizerFast

    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path / "winner"))
    gguf_tokenizer(gguf)  # the other process's finished copy
    (won,) = (tmp_path / "winner" / "tokenizers").iterdir()
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path / "cache"))
    real_save = PreTrainedTokenizerFast.save_pretrained

    def save_while_the_other_finishes(self: Any, directory: Any, *args: Any, **kwargs: Any) -> Any:
        shutil.copytree(won, tmp_path / "cache" / "tokenizers" / won.name)
        return real_save(self, directory, *args, **kwargs)

    monkeypatch.setattr(PreTrainedTokenizerFast, "save_pretrained", save_while_the_other_finishes)
    with caplog.at_level(logging.WARNING, logger="searchain_graph.llms.llamacpp"):
        assert gguf_tokenizer(gguf).eos_token_id is not None
    assert not caplog.records
    assert [p.name for p in (tmp_path / "cache" / "tokenizers").iterdir()] == [won.name]

    monkeypatch.setattr(PreTrainedTokenizerFast, "save_pretrained", real_save)
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path / "unwritable"))

    def refuse(*args: Any) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr("searchain_graph.llms.llamacpp.os.replace", refuse)
    with caplog.at_level(logging.WARNING, logger="searchain_graph.llms.llamacpp"):
        assert gguf_tokenizer(gguf).eos_token_id is not None
    assert "could not cache the tokenizer" in caplog.text
    assert not list((tmp_path / "unwritable" / "tokenizers").iterdir())  # the partial copy is removed


def test_the_header_reader_reads_what_the_file_records(gguf: Path) -> None:
    metadata, tensors = gguf_header(gguf)
    assert metadata["general.architecture"] == "llama" and train_context(gguf) == 8192
    assert "token_embd.weight" in tensors and all(n > 0 for n in tensors.values())
    assert sum(tensors.values()) < gguf.stat().st_size < sum(tensors.values()) + 8 * 2**20  # the rest is the header
    with pytest.raises(ValueError, match="not a GGUF file"):
        gguf_header(Path(__file__))


def resident_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0  # pragma: no cover - not Linux


def test_tokens_stream_as_they_come_and_join_into_the_reply(gguf: Path) -> None:
    llm = TransformersChatModel.from_smollm2(max_new_tokens=40)
    question = "Where was Barack Obama born? Answer in two sentences."
    whole = llm.invoke(question).text
    chunks = list(llm.stream(question))
    assert len(chunks) > 3 and "".join(c.text for c in chunks) == whole
    assert chunks[-1].chunk_position == "last" and chunks[-1].usage_metadata is not None
    # A stop sequence: no chunk ever shows text from it on, and the chunks are still invoke's reply.
    stop = whole[len(whole) // 2 : len(whole) // 2 + 3]
    cut = llm.invoke(question, stop=[stop]).text
    streamed = [c.text for c in llm.stream(question, stop=[stop])]
    assert "".join(streamed) == cut and stop not in "".join(streamed)


async def test_stream_events_carry_the_tokens(gguf: Path) -> None:
    llm = TransformersChatModel.from_smollm2(max_new_tokens=24)
    pieces = [
        event["data"]["chunk"].text
        async for event in llm.astream_events("Name three cities in Canada.", version="v2")
        if event["event"] == "on_chat_model_stream"
    ]
    assert len(pieces) > 3 and "".join(pieces) == (await llm.ainvoke("Name three cities in Canada.")).text


def test_only_text_that_cannot_begin_a_stop_sequence_streams() -> None:
    from searchain_graph.llms.replies import streamable

    assert streamable("Toronto.\n[Query", ["\n["]) == "Toronto."
    assert streamable("Toronto.\n", ["\n["]) == "Toronto."  # "\n" may begin the stop sequence
    assert streamable("Toronto.\nHe", ["\n["]) == "Toronto.\nHe"
    assert streamable("caf\ufffd", []) == "caf"  # half a character waits for the rest


async def test_a_cancelled_stream_stops_the_engine_at_the_next_token(gguf: Path) -> None:
    """A client that goes away (a closed stream, a cancelled task) frees the slot instead of decoding on."""
    import asyncio
    import time

    llm = TransformersChatModel.from_smollm2(max_new_tokens=2000, stop_repeats=0).load()
    question = "Write a long story about a lighthouse keeper, with many details."
    decoder = llm.decoder

    async def ended(calls: int) -> bool:
        """Whether the engine ended the request soon (one token's time, not up to 2,000 tokens')."""
        started = time.monotonic()
        while decoder.stats.calls == calls and time.monotonic() - started < 3:
            await asyncio.sleep(0.01)
        return bool(decoder.stats.calls == calls + 1)

    calls = decoder.stats.calls
    stream = llm.astream(question)
    seen = 0
    async for _ in stream:
        seen += 1
        if seen == 3:
            break
    await stream.aclose()
    assert await ended(calls)

    async def consume() -> None:
        async for _ in llm.astream(question):
            pass

    calls = decoder.stats.calls
    task = asyncio.create_task(consume())
    await asyncio.sleep(0.5)  # inside the reply
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert await ended(calls)
    assert (await llm.ainvoke("Say hi.", max_new_tokens=4)).text  # the slot is free


def test_a_decoder_dropped_at_once_does_not_hang_its_process(gguf: Path) -> None:
    """llama.cpp's HTTP thread must be in its accept loop before a server can be destroyed.

    Without waiting for it, about half of the decoders dropped right after they were made left
    their destructor waiting for that thread for ever (and the process with it).
    """
    import subprocess
    import sys

    code = (
        "import gc, sys\n"
        "from searchain_graph.llms.llamacpp import LlamaCppConfig, LlamaCppDecoder\n"
        "for _ in range(6):\n"
        "    LlamaCppDecoder(sys.argv[1], LlamaCppConfig(context=256))\n"
        "    gc.collect()\n"
        "print('dropped 6')\n"
    )
    # A hang lasts for ever; 300 s leaves room for a machine busy with other work (6 loads took
    # over 120 s beside four evaluations on two cores).
    done = subprocess.run([sys.executable, "-c", code, str(gguf)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "dropped 6" in done.stdout, done.stderr[-2000:]
