"""Local weights: loading a checkpoint, and the caches that make the next load fast.

Two conversions are slow and are done once per machine, under ``$SEARCHAIN_CACHE`` (default
``~/.cache/searchain-graph``):

* a GGUF checkpoint (SmolLM2 ships as one) dequantised by transformers, saved as safetensors;
* a transformers checkpoint converted for ONNX Runtime GenAI (:mod:`searchain_graph.llms.onnx_genai`).

Both are keyed by the source's *content* (a SHA-256 of the GGUF file, or of a model directory's
files), not by its path, so a reinstalled or moved file finds its conversion again, and a changed
file never reuses a stale one. Every cache entry is written aside and renamed when complete.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from searchain_graph.llms.hub import ModelNotFoundError, from_pretrained

logger = logging.getLogger(__name__)

_HASH_CHUNK = 1 << 22


def cache_root() -> Path:
    """``$SEARCHAIN_CACHE``, else ``$XDG_CACHE_HOME/searchain-graph``, else ``~/.cache/searchain-graph``."""
    base = os.environ.get("SEARCHAIN_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "searchain-graph"
    )
    return Path(base)


def content_key(source: Path) -> str:
    """A short SHA-256 of a file's bytes, or of a directory's files (names and bytes), in order.

    The digest of a file is remembered beside its size and modification time in the cache, so a
    warm load reads the 100 MB GGUF file again only when it has changed.
    """
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file())
    stamp = json.dumps([[str(p.relative_to(source.parent)), p.stat().st_size, p.stat().st_mtime_ns] for p in files])
    memo = cache_root() / "keys" / (hashlib.sha256(f"{source.resolve()}|{stamp}".encode()).hexdigest()[:24] + ".txt")
    if memo.is_file():
        return memo.read_text(encoding="utf-8").strip()
    digest = hashlib.sha256()
    for path in files:
        digest.update(str(path.relative_to(source)).encode() if source.is_dir() else b"")
        with path.open("rb") as handle:
            while chunk := handle.read(_HASH_CHUNK):
                digest.update(chunk)
    key = digest.hexdigest()[:16]
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(key, encoding="utf-8")
        os.replace(tmp, memo)
    except OSError as exc:  # a cache we cannot write is not an error
        logger.warning("could not remember the digest of %s: %s", source, exc)
    return key


def load_transformers(model_path: str, gguf_file: str | None, *, cache: bool = True) -> tuple[Any, Any, Path | None]:
    """(tokenizer, model, local directory of plain safetensors weights or ``None``) for a checkpoint.

    A GGUF file is dequantised once and cached (when ``cache``); later loads read the cache.

    Raises:
        ModelNotFoundError: the model cannot be found or fetched.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not gguf_file:
        tokenizer = from_pretrained(AutoTokenizer.from_pretrained, model_path)
        model = from_pretrained(AutoModelForCausalLM.from_pretrained, model_path)
        return tokenizer, model, Path(model_path) if Path(model_path).is_dir() else None
    source = Path(model_path) / gguf_file
    cached = dequantized_dir(source) if cache else None
    if cached is not None and (cached / "config.json").is_file():
        return AutoTokenizer.from_pretrained(cached), AutoModelForCausalLM.from_pretrained(cached), cached
    tokenizer = AutoTokenizer.from_pretrained(model_path, gguf_file=gguf_file)
    model = AutoModelForCausalLM.from_pretrained(model_path, gguf_file=gguf_file)
    if cached is not None and save_dequantized(model, tokenizer, cached):
        return tokenizer, model, cached
    return tokenizer, model, None


def dequantized_dir(gguf: Path) -> Path:
    """Where the dequantised weights of ``gguf`` are cached (keyed by its content)."""
    return cache_root() / "dequantized" / f"{gguf.stem}-{content_key(gguf)}"


def save_dequantized(model: Any, tokenizer: Any, target: Path) -> bool:
    """Save a GGUF-loaded model's fp32 weights as safetensors at ``target``; ``False`` if it cannot.

    transformers marks a GGUF-loaded model as quantised and refuses to save it, although its
    weights are already plain fp32 tensors; the marker is dropped before saving.
    """
    tmp: Path | None = None
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=".tmp-"))
        model.hf_quantizer = None
        model.is_quantized = False
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        try:
            os.replace(tmp, target)
        except OSError:
            if not (target / "config.json").is_file():  # not a concurrent writer that won
                raise
            shutil.rmtree(tmp, ignore_errors=True)
        return True
    except (OSError, ValueError, RuntimeError) as exc:  # a cache we cannot write is not an error
        logger.warning("could not cache dequantised weights at %s: %s", target, exc)
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        return False


def plain_weights_dir(model_path: str, gguf_file: str | None) -> Path:
    """A directory of plain safetensors weights for a local checkpoint, as model servers load them.

    A GGUF file is dequantised into the cache once (:func:`dequantized_dir`); a model directory
    is returned as it is. ``transformers serve DIR`` and vLLM serve the result.

    Raises:
        ModelNotFoundError: ``model_path`` is neither a GGUF file's directory nor a model directory.
        OSError: the dequantised weights could not be written to the cache.
    """
    if not gguf_file:
        if (Path(model_path) / "config.json").is_file():
            return Path(model_path)
        raise ModelNotFoundError(f"{model_path} is not a local model directory (a server loads hub names itself)")
    source = Path(model_path) / gguf_file
    if not source.is_file():
        raise ModelNotFoundError(f"GGUF file not found: {source}")
    cached = dequantized_dir(source)
    if (cached / "config.json").is_file():
        return cached
    _, _, local = load_transformers(model_path, gguf_file)
    if local is None:
        raise OSError(f"could not write the dequantised weights of {source} under {cached.parent}")
    return local
