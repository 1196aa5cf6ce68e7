"""Loading checkpoints by local path or Hugging Face hub name, with errors that say what to do.

Every model in this package (the chat model, the readers, ColBERT) is named either by a
local directory or by a hub name such as ``facebook/dpr-reader-multiset-base``. Hub names
need network access to the hub on first use. Where there is none, loading fails with a
:class:`ModelNotFoundError` that names the checkpoint and says how to pass a local copy
instead, rather than with a raw ``OSError`` from deep inside transformers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")


class ModelNotFoundError(FileNotFoundError):
    """A model path or package is missing; the message says how to provide it."""


def looks_local(name_or_path: str | Path) -> bool:
    """Whether ``name_or_path`` is meant as a filesystem path rather than a hub name."""
    text = str(name_or_path)
    return Path(text).expanduser().exists() or text.startswith((".", "/", "~")) or text.count("/") > 1


def check_local(name_or_path: str | Path, *, what: str = "model") -> str:
    """Return ``name_or_path`` as a string, after checking a local path exists.

    Raises:
        ModelNotFoundError: ``name_or_path`` is a local path that is not a directory.
    """
    text = str(name_or_path)
    if looks_local(text) and not Path(text).expanduser().is_dir():
        raise ModelNotFoundError(f"{what} directory not found: {text}")
    return str(Path(text).expanduser()) if looks_local(text) else text


@contextlib.contextmanager
def quiet_loading() -> Iterator[None]:
    """Transformers' per-tensor "Loading weights" bars off while a component loads (the CLI's own lines say so).

    A reader or encoder loaded mid-run (the duplicate check in round 2) would otherwise draw its bar
    among the rounds' progress lines. The setting is put back as it was.
    """
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    if shown:
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def from_pretrained(loader: Callable[..., T], name_or_path: str | Path, *, what: str = "model", **kwargs: Any) -> T:
    """Call ``loader(name_or_path, **kwargs)`` (a ``from_pretrained``) with clear errors.

    Args:
        loader: For example ``AutoModelForQuestionAnswering.from_pretrained``.
        name_or_path: A local directory or a hub name.
        what: What is being loaded, for the error message ("DPR reader", "ColBERT checkpoint").
        **kwargs: Passed to ``loader``.

    Raises:
        ModelNotFoundError: the local directory is missing, or the hub name cannot be fetched
            (no network, or no such repository); the message says how to pass a local path.
    """
    source = check_local(name_or_path, what=what)
    try:
        with quiet_loading():
            return loader(source, **kwargs)
    except OSError as exc:
        if looks_local(source):
            raise ModelNotFoundError(f"could not load {what} from {source}: {exc}") from exc
        raise ModelNotFoundError(
            f"could not load {what} {source!r} from the Hugging Face hub ({type(exc).__name__}: {exc}). "
            f"Without access to the hub, download it where you have access (for example "
            f"`huggingface-cli download {source} --local-dir DIR`), copy DIR here, and pass the local "
            f"directory instead of the name."
        ) from exc
