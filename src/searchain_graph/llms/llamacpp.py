"""llama.cpp in this process: a GGUF file run as it is, with slots, a prompt cache and speculation.

The offline models are GGUF files of 4- to 8-bit blocks. llama.cpp reads those blocks where they
lie (the file is memory-mapped, nothing is converted or dequantised), so the first question of a
new installation waits seconds, not minutes, and the process holds about the file's size, not an
fp32 copy of the model. ``xllamacpp`` ships llama.cpp's server prebuilt for CPUs (no compiler) and
runs it inside this process: requests go through its completion handler, with no second process to
leave behind. The server also listens for HTTP, which nothing here offers to anyone: it listens on a
Unix socket in a folder only this user can enter, and asks for a key that only this process knows
(where there are no Unix sockets, on a loopback port with that key).

* :class:`LlamaCppDecoder` sends token ids (the prompt is the same one every backend sees, from the
  model's own chat template) and hands back the reply's ids, log-probabilities and finish reason,
  streaming so that a stop check in Python can end a reply early.
* **No prefill twice.** Each slot keeps the last prompt it computed; a new prompt is continued
  from the longest prefix it shares with it (llama.cpp's ``cache_prompt``), so a round continues
  its own conversation and a new question reuses the system and demonstration prefix that every
  question shares. Prompts that leave a slot are kept in a host-memory cache
  (:attr:`LlamaCppConfig.cache_ram_mib`) and restored into whichever slot takes a matching prompt.
  :attr:`LlamaCppDecoder.stats` reads what was reused from llama.cpp's own counters.
* **Nor in the next process** (:attr:`LlamaCppConfig.prefix_store`, one slot): a long prompt's
  computed state is saved to disk after its call, and a new process restores the stored state
  that shares the longest prefix with its first prompt, or with a later prompt of another kind
  that the slot shares little with (:mod:`.prefix_store`).
* **Concurrency.** ``slots`` requests decode together in one batch (llama.cpp's continuous
  batching); more wait for a free slot.
* **Speculative decoding** (off by default): ``"ngram"`` drafts from n-grams already in the
  context (prompt lookup), ``"draft"`` from a smaller model with the same vocabulary. On the
  two-core machine of ``docs/benchmarks.md`` neither speeds greedy decoding up, and verifying a
  batch of drafted tokens can change a near-tied greedy choice; both are there to be measured.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import secrets
import shutil
import socket
import struct
import tempfile
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.prefix_store import PrefixStore, common_prefix
from searchain_graph.llms.sampling import SAMPLING_TOP_K
from searchain_graph.llms.weights import cache_root, content_key

logger = logging.getLogger(__name__)

Speculation = Literal["none", "ngram", "draft"]
"""Speculative decoding: none, prompt lookup (n-grams of the context), or a draft model."""

DEFAULT_CONTEXT = 4096
"""Tokens each slot holds (prompt and reply) unless the model's own context is shorter."""


class ContextLengthError(ValueError):
    """A prompt that does not fit the context: the message names both lengths."""


class LlamaCppUnavailableError(RuntimeError):
    """xllamacpp is not installed, or llama.cpp could not load the file; the message says which."""


def default_threads() -> int:
    """``$OMP_NUM_THREADS`` when set, otherwise the cores this process may run on."""
    try:
        wanted = int(os.environ.get("OMP_NUM_THREADS", "0"))
    except ValueError:
        wanted = 0
    if wanted > 0:
        return wanted
    affinity = getattr(os, "sched_getaffinity", None)
    return max(1, len(affinity(0)) if affinity else (os.cpu_count() or 1))


@dataclass(frozen=True, kw_only=True)
class LlamaCppConfig:
    """How llama.cpp runs one GGUF file."""

    context: int = DEFAULT_CONTEXT
    """Tokens one slot holds, prompt and reply together; a longer prompt is refused."""
    slots: int = 1
    """Requests decoded together; more wait for a free slot."""
    threads: int | None = None
    """CPU threads; ``None``: :func:`default_threads`."""
    cache_ram_mib: int = 256
    """Host memory for prompts that left their slot, restored when a new prompt shares their prefix
    (0: none). About 28 KB a token for Qwen2.5-Coder-1.5B."""
    speculation: Speculation = "none"
    """Speculative decoding (see the module's docstring)."""
    draft_model: str | None = None
    """The draft model's GGUF file, for ``speculation="draft"``."""
    draft_tokens: int = 8
    """Most tokens drafted at a time."""
    prefix_store: str | None = None
    """A folder where long prompts' computed state is kept for later processes (:mod:`.prefix_store`;
    one per model file and llama.cpp build); ``None``: none. Used with one slot only."""


@dataclass
class DecoderStats:
    """What a decoder computed and what it took from its prompt cache, per call and in total."""

    calls: int = 0
    prompt_tokens: int = 0
    reused_tokens: int = 0
    per_call_reuse: list[int] = field(default_factory=list)
    drafted_tokens: int = 0
    accepted_tokens: int = 0

    @property
    def acceptance(self) -> float | None:
        """Share of drafted tokens the model accepted (``None`` before any was drafted)."""
        return self.accepted_tokens / self.drafted_tokens if self.drafted_tokens else None


def import_xllamacpp() -> Any:
    """The ``xllamacpp`` module.

    Raises:
        LlamaCppUnavailableError: it is not installed.
    """
    try:
        import xllamacpp
    except ImportError as exc:  # pragma: no cover - it is a dependency
        raise LlamaCppUnavailableError(
            "the llama.cpp backend needs xllamacpp: `pip install xllamacpp`, or choose backend='torch'"
        ) from exc
    return xllamacpp


class LlamaCppDecoder:
    """Greedy (or sampled) decoding of token ids by llama.cpp, with its prompt cache.

    Args:
        gguf: The model's GGUF file.
        config: Context, slots, threads, prompt cache and speculation.
        special_ids: Token ids that end a reply (end of turn, end of text); never returned.
        train_context: The model's own context length, when known: ``config.context`` is capped by it.
        encode: ``text -> ids`` of the model's tokenizer. With speculation, llama.cpp streams a
            drafted token's text but not its id: the reply's ids are then its text encoded.

    Raises:
        LlamaCppUnavailableError: xllamacpp is missing, or llama.cpp cannot load the file.
    """

    def __init__(
        self,
        gguf: str | Path,
        config: LlamaCppConfig | None = None,
        *,
        special_ids: Sequence[int] = (),
        train_context: int | None = None,
        encode: Callable[[str], list[int]] | None = None,
    ) -> None:
        x = import_xllamacpp()
        self.gguf = Path(gguf)
        self.config = config or LlamaCppConfig()
        cfg = self.config
        if cfg.slots < 1 or cfg.context < 16:
            raise ValueError(f"need at least 1 slot of 16 tokens, got {cfg.slots} slot(s) of {cfg.context}")
        self.context = min(cfg.context, train_context) if train_context else cfg.context
        self.threads = cfg.threads or default_threads()
        self.special_ids = frozenset(int(i) for i in special_ids)
        self.speculating = cfg.speculation != "none"
        if self.speculating and encode is None:
            raise ValueError("speculation needs encode=, the tokenizer's text -> ids")
        self._encode = encode
        params = x.CommonParams()
        params.model.path = str(self.gguf)
        params.n_parallel = cfg.slots
        params.n_ctx = self.context * cfg.slots
        params.kv_unified = False  # each slot its own context of `self.context` tokens
        params.cpuparams.n_threads = params.cpuparams_batch.n_threads = self.threads
        params.warmup = False
        params.cache_prompt = True
        params.cache_ram_mib = cfg.cache_ram_mib
        params.verbosity = -1  # llama.cpp's own log: errors only
        params.ctx_shift = False  # a reply never silently drops the start of its prompt
        if cfg.speculation == "ngram":
            params.speculative.types = [x.common_speculative_type.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
            params.speculative.ngram_simple.size_n = 3
            params.speculative.ngram_simple.size_m = cfg.draft_tokens
        elif cfg.speculation == "draft":
            if not cfg.draft_model or not Path(cfg.draft_model).is_file():
                raise ModelNotFoundError(f"speculation='draft' needs draft_model= a GGUF file, got {cfg.draft_model!r}")
            params.speculative.types = [x.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
            draft = params.speculative.draft
            draft.mparams.path = str(cfg.draft_model)
            draft.n_max = cfg.draft_tokens
            draft.cpuparams.n_threads = draft.cpuparams_batch.n_threads = self.threads
        # The server's HTTP listener: reachable by this process only (see the module's docstring).
        self._key = secrets.token_urlsafe(24)
        params.api_keys = [self._key]
        self._control = tempfile.mkdtemp(prefix="searchain-llama-")  # mode 0700
        weakref.finalize(self, shutil.rmtree, self._control, True)
        self._socket = os.path.join(self._control, "http.sock") if hasattr(socket, "AF_UNIX") else None
        if self._socket is not None:
            params.hostnames = [self._socket]
        self.prefixes = PrefixStore(Path(cfg.prefix_store)) if cfg.prefix_store and cfg.slots == 1 else None
        # GET /slots is answered by the server's main loop (see _await_loop). A slot file is written
        # into the prefix store, or else into the private control folder, never the working folder.
        params.endpoint_slots = True
        params.slot_save_path = self._control + os.sep
        if self.prefixes is not None:
            self.prefixes.directory.mkdir(parents=True, exist_ok=True)
            params.slot_save_path = str(self.prefixes.directory) + os.sep
        try:
            self._server = x.Server(params)
        except Exception as exc:  # llama.cpp reports a file it cannot load as a plain exception
            raise LlamaCppUnavailableError(f"llama.cpp could not load {self.gguf}: {exc}") from exc
        self._address = str(self._server.listening_address)
        self._await_loop()
        self._stats_lock = threading.Lock()
        self._restore_failed = False
        # The tokens the one slot holds after the last call: what a call ended by our own stop check
        # reused, since llama.cpp sends no timings to a stream we cancel. Unknown with several slots.
        self._held: list[int] | None = [] if cfg.slots == 1 else None
        self.stats = DecoderStats()

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._socket is not None:
            return _UnixConnection(self._socket, timeout)
        host, _, port = self._address.removeprefix("http://").rpartition(":")
        return http.client.HTTPConnection(host, int(port), timeout=timeout)

    def _await_loop(self, seconds: float = 300.0) -> None:
        """Return once the server's main loop has answered a task.

        The server's thread enters its main loop only after the constructor returns, and a server
        destroyed before that loses the stop request: its destructor then waits for the loop for
        ever (seen in about half of the decoders dropped right after they were made, and, on a busy
        machine, after ``/health`` had answered). ``GET /slots`` is answered from the main loop, so
        its answer shows the loop runs. The wait is long because a hang is for ever; a warning
        after it says the loop never answered.
        """
        deadline = time.monotonic() + seconds
        headers = {"Authorization": f"Bearer {self._key}"}
        while True:
            conn = self._connection(timeout=5)
            try:
                conn.request("GET", "/slots", headers=headers)
                reply = conn.getresponse()
                reply.read()
                if reply.status == 200:
                    return
            except OSError:
                pass
            finally:
                conn.close()
            if time.monotonic() > deadline:
                logger.warning("llama.cpp's main loop did not answer within %.0f s", seconds)
                return
            time.sleep(0.01)

    def _slot_action(self, action: str, filename: str) -> bool:
        """Save or restore slot 0 through the server's own listener; False (and a log line) when it fails."""
        body = json.dumps({"filename": filename})
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {self._key}"}
        try:
            conn = self._connection(timeout=60)
            try:
                conn.request("POST", f"/slots/0?action={action}", body, headers)
                reply = conn.getresponse()
                text = reply.read().decode("utf-8", "replace")
            finally:
                conn.close()
        except OSError as exc:
            logger.warning("llama.cpp could not %s a prompt's state (%s): computing it instead", action, exc)
            return False
        if reply.status != 200:
            logger.warning("llama.cpp could not %s a prompt's state (%s %s)", action, reply.status, text[:200])
            return False
        return True

    def _restore_prefix(self, prompt: list[int]) -> int:
        """Before a call: restore the stored state when it saves prefill over what the slot holds.

        A fresh slot holds nothing; a used one its last prompt and reply (``_held``). The stored
        state sharing the longest prefix with ``prompt`` is taken when it shares at least the
        store's ``min_tokens`` more than the slot does: a process's first prompt, and a later prompt
        of another kind (the tracing prompt after the rounds' chain), while a round that continues
        the slot's conversation keeps the slot.

        Returns:
            The prompt's tokens the slot holds now (0 with several slots, where it is not known).
        """
        if self._held is None:
            return 0
        kept = common_prefix(self._held, prompt)  # 0 for a fresh slot
        store = self.prefixes
        if store is None or self._restore_failed:
            return kept
        found = store.best(prompt)
        if found is None or found[1] - kept < store.min_tokens:
            return kept
        if not self._slot_action("restore", found[0]):
            self._restore_failed = True  # logged once; this decoder computes its prompts from now on
            return kept
        logger.debug("restored %d computed prompt tokens from %s (the slot held %d)", found[1], found[0], kept)
        self._held = prompt[: found[1]]
        return found[1]

    def _store_prefix(self, prompt: list[int], reused: int) -> None:
        """After a call that computed a long prompt the store lacks: save the slot's state for later processes."""
        store = self.prefixes
        if store is None or len(prompt) - reused < store.min_tokens or not store.wants(prompt):
            return
        try:
            scratch = store.scratch_name()
            if self._slot_action("save", scratch):
                store.commit(scratch, prompt)
            else:
                store.discard(scratch)
        except OSError as exc:  # a store we cannot write is not an error
            logger.warning("could not keep a prompt's state in %s: %s", store.directory, exc)

    def generate(
        self,
        ids: Sequence[int],
        max_new_tokens: int,
        *,
        stop: Callable[[list[int]], bool] | None = None,
        logprobs: bool = False,
        temperature: float = 0.0,
        seed: int | None = None,
    ) -> tuple[list[int], list[float], str]:
        """Reply to ``ids``: (new token ids without the end token, their log-probabilities, finish reason).

        Args:
            ids: The prompt's token ids (at least one).
            max_new_tokens: Most tokens generated (fewer when the context ends first).
            stop: Called with the new ids after each token; ``True`` ends the reply (finish "stop").
            logprobs: Return each generated token's log-probability (not with speculation: llama.cpp
                reports none for a drafted token).
            temperature: 0 decodes greedily; above 0 samples from the likeliest tokens (as the other backends).
            seed: Makes a sampled reply reproducible.

        Raises:
            ContextLengthError: the prompt leaves no room for a reply in a slot's context.
            ValueError: an empty prompt or a budget below 1.
            RuntimeError: llama.cpp refused the request (its message).
        """
        if not ids:
            raise ValueError("the prompt is empty")
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new_tokens}")
        if logprobs and self.speculating:
            raise ValueError("log-probabilities are not reported with speculative decoding: use speculation='none'")
        prompt = [int(i) for i in ids]
        if len(prompt) >= self.context:
            raise ContextLengthError(
                f"the prompt is {len(prompt)} tokens, and the model's context holds {self.context} "
                f"(prompt and reply together): shorten the prompt or raise the context"
            )
        budget = min(max_new_tokens, self.context - len(prompt))
        request: dict[str, Any] = {
            "prompt": prompt,
            "n_predict": budget,
            "stream": True,
            "cache_prompt": True,
            "n_probs": 1,
            "temperature": max(0.0, float(temperature)),
            "repeat_penalty": 1.0,
            "top_k": SAMPLING_TOP_K,
            "top_p": 1.0,
            "min_p": 0.0,
        }
        if seed is not None:
            request["seed"] = int(seed)
        new_ids: list[int] = []
        lps: list[float] = []
        text: list[str] = []
        state: dict[str, Any] = {"finish": "length", "ours": False, "final": None, "error": None}

        def on_chunk(chunk: Any) -> bool:
            data = chunk if isinstance(chunk, dict) else json.loads(chunk)
            if "choices" not in data:  # an error object
                state["error"] = data.get("error", data)
                return True
            choice = data["choices"][0]
            if self.speculating and self._encode is not None:
                text.append(choice.get("text") or "")
                new_ids[:] = self._encode("".join(text))
                if stop is not None and new_ids and stop(new_ids):
                    state["finish"], state["ours"] = "stop", True
                    return True
            for entry in [] if self.speculating else (choice.get("logprobs") or {}).get("content") or []:
                new_ids.append(int(entry["id"]))
                lps.append(float(entry["logprob"]))
                if stop is not None and new_ids[-1] not in self.special_ids and stop(new_ids):
                    state["finish"], state["ours"] = "stop", True
                    return True
            if choice.get("finish_reason"):
                state["finish"] = "stop" if choice["finish_reason"] == "stop" else "length"
            if data.get("timings"):
                state["final"] = data
            return False

        expected = min(self._restore_prefix(prompt), len(prompt) - 1)
        result = self._server.handle_completions(request, on_chunk)
        if self._held is not None:
            self._held = prompt + new_ids
        if state["error"] is None and isinstance(result, dict) and "error" in result:
            state["error"] = result["error"]
        if state["error"] is not None:
            error = state["error"]
            raise RuntimeError(
                f"llama.cpp refused the request: {error.get('message', error) if isinstance(error, dict) else error}"
            )
        if not state["ours"] and new_ids and new_ids[-1] in self.special_ids:  # the end token is not the reply's
            new_ids.pop()
            del lps[len(new_ids) :]  # with speculation the ids are the text's, and carry no log-probabilities
            state["finish"] = "stop"
        self._store_prefix(prompt, self._count(state["final"], len(prompt), expected))
        return new_ids, (lps if logprobs else []), state["finish"]

    def _count(self, final: dict[str, Any] | None, prompt_len: int, expected: int = 0) -> int:
        """Add one call's figures to :attr:`stats`; return the prompt tokens it took from the cache.

        A stream ended by our stop check gets no timings: its reuse is then ``expected``, the prefix
        it shares with what the slot held (llama.cpp reuses that prefix and computes the rest).
        """
        timings = (final or {}).get("timings") or {}
        reused = int(timings["cache_n"]) if "cache_n" in timings else expected
        with self._stats_lock:
            self.stats.calls += 1
            self.stats.prompt_tokens += prompt_len
            self.stats.reused_tokens += reused
            self.stats.per_call_reuse.append(reused)
            self.stats.drafted_tokens += int(timings.get("draft_n", 0))
            self.stats.accepted_tokens += int(timings.get("draft_n_accepted", 0))
        return reused


class _UnixConnection(http.client.HTTPConnection):
    """HTTP over a Unix socket."""

    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        sock.connect(self._path)
        self.sock = sock


def gguf_tokenizer(gguf: Path) -> Any:
    """The tokenizer (and chat template) a GGUF file describes, converted once and cached.

    Only the file's metadata is read (no tensor is loaded); the converted tokenizer is saved under
    ``$SEARCHAIN_CACHE/tokenizers``, keyed by the file's content, so later loads take a second.

    Raises:
        ModelNotFoundError: the file is missing.
    """
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    if not gguf.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {gguf}")
    target = cache_root() / "tokenizers" / f"{gguf.stem}-{content_key(gguf)}"
    if (target / "tokenizer_config.json").is_file():
        return AutoTokenizer.from_pretrained(target)
    tokenizer = PreTrainedTokenizerFast.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    try:
        tokenizer.save_pretrained(partial)
        os.replace(partial, target)
    except OSError as exc:  # a cache we cannot write is not an error
        if not (target / "tokenizer_config.json").is_file():  # else a concurrent first run cached it first
            logger.warning("could not cache the tokenizer of %s: %s", gguf, exc)
    finally:
        if partial.exists():
            import shutil

            shutil.rmtree(partial, ignore_errors=True)
    return tokenizer


def gguf_header(gguf: Path) -> tuple[dict[str, int | str], dict[str, int]]:
    """A GGUF file's scalar metadata and each tensor's bytes in the file, read from its header only.

    Arrays (the vocabulary, the merges) are skipped, so this reads a few kilobytes, not the
    megabytes of strings a full reader parses. A tensor's bytes run from its offset to the next
    tensor's (the last one's to the end of the file), padding included: what a decoder reads.

    Raises:
        ValueError: the file is not GGUF.
    """
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    formats = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
    metadata: dict[str, int | str] = {}
    with gguf.open("rb") as f:
        if f.read(4) != b"GGUF":
            raise ValueError(f"{gguf} is not a GGUF file")
        _version, tensor_count, count = struct.unpack("<IQQ", f.read(20))

        def string() -> str:
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n).decode("utf-8", "replace")

        for _ in range(count):
            key = string()
            (kind,) = struct.unpack("<I", f.read(4))
            if kind == 8:
                metadata[key] = string()
            elif kind == 9:
                (inner,) = struct.unpack("<I", f.read(4))
                (n,) = struct.unpack("<Q", f.read(8))
                if inner == 8:
                    for _ in range(n):
                        string()
                else:
                    f.seek(sizes[inner] * n, 1)
            else:
                (value,) = struct.unpack(formats[kind], f.read(sizes[kind]))
                metadata[key] = int(value) if kind not in (6, 12) else value
        offsets: list[tuple[int, str]] = []
        for _ in range(tensor_count):
            name = string()
            (dims,) = struct.unpack("<I", f.read(4))
            f.seek(8 * dims, 1)
            _kind, offset = struct.unpack("<IQ", f.read(12))
            offsets.append((offset, name))
        alignment = int(metadata.get("general.alignment", 32))
        data_start = (f.tell() + alignment - 1) // alignment * alignment
    end = gguf.stat().st_size - data_start
    offsets.sort()
    ends = [o for o, _ in offsets[1:]] + [end]
    return metadata, {name: stop - start for (start, name), stop in zip(offsets, ends, strict=True)}


def check_gguf(gguf: Path) -> None:
    """Refuse, in one sentence naming the file, what is not a whole GGUF file (read from its header only).

    Raises:
        ModelNotFoundError: the file is missing.
        ValueError: the file is another format, its header is damaged, or its tensors run past its end
            (a download or copy cut short).
    """
    if not gguf.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {gguf}")
    try:
        _, sizes = gguf_header(gguf)
    except ValueError:
        raise
    except (OSError, EOFError, KeyError, MemoryError, OverflowError, struct.error) as exc:
        raise ValueError(f"{gguf} is not a GGUF model llama.cpp can read: its header is damaged ({exc})") from None
    if not sizes or min(sizes.values()) <= 0:
        raise ValueError(
            f"{gguf} is cut short: its tensors need more bytes than the file's {gguf.stat().st_size:,} "
            "(an interrupted download or copy?)"
        )


def train_context(gguf: Path) -> int | None:
    """The context length the file was trained with (``<architecture>.context_length``), if recorded."""
    metadata, _ = gguf_header(gguf)
    value = metadata.get(f"{metadata.get('general.architecture')}.context_length")
    return value if isinstance(value, int) else None


def load_llamacpp(gguf: Path, config: LlamaCppConfig | None = None) -> tuple[Any, LlamaCppDecoder]:
    """The tokenizer and a :class:`LlamaCppDecoder` for a GGUF file: nothing converted, nothing dequantised.

    Raises:
        ModelNotFoundError: the file is missing.
        ValueError: the file is not GGUF, or is cut short (:func:`check_gguf`).
        LlamaCppUnavailableError: xllamacpp is missing, or llama.cpp cannot load the file.
    """
    check_gguf(gguf)
    tokenizer = gguf_tokenizer(gguf)
    # llama.cpp stops on an end-of-generation token, which is one of the file's special tokens.
    special = {tokenizer.eos_token_id} | {i for i, t in tokenizer.added_tokens_decoder.items() if t.special}
    special_ids = sorted(i for i in special if i is not None)
    decoder = LlamaCppDecoder(
        gguf, config, special_ids=special_ids, train_context=train_context(gguf),
        encode=lambda text: list(tokenizer.encode(text, add_special_tokens=False)),
    )  # fmt: skip
    return tokenizer, decoder
