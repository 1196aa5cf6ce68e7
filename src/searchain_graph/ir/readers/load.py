"""Readers by name, as ``searchain ask/eval --reader`` takes them."""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel

from searchain_graph.ir.readers.base import Reader
from searchain_graph.ir.readers.llm import LLMReader

READER_KINDS = ("bundled", "llm", "dpr", "extractive")


def check_reader_spec(spec: str) -> str:
    """``spec`` if it names a reader kind (before anything loads), else a ValueError naming the kinds."""
    kind = spec.partition(":")[0]
    if kind not in READER_KINDS:
        raise ValueError(f"unknown --reader {spec!r}: use bundled[:DIR], llm, dpr[:MODEL] or extractive[:MODEL]")
    return spec


def load_reader(spec: str, llm: BaseChatModel) -> Reader:
    """A reader from a command-line spec, loaded now so that a bad path fails early.

    Args:
        spec: ``bundled[:DIR]`` (the reader shipped in the package,
            :class:`~searchain_graph.ir.readers.bundled.BundledReader`), ``llm``
            (:class:`LLMReader` over ``llm``), ``dpr[:MODEL]`` (the paper's DPR reader) or
            ``extractive[:MODEL]`` (any SQuAD-style QA model); ``MODEL`` is a hub name or a
            local directory.
        llm: The chat model, for ``llm``.

    Raises:
        ValueError: an unknown kind.
        ModelNotFoundError: the model cannot be found or fetched.
    """
    kind, _, model = check_reader_spec(spec).partition(":")
    if kind == "llm":
        return LLMReader(llm)
    if kind == "bundled":
        from searchain_graph.ir.readers.bundled import BundledReader

        return (BundledReader(model) if model else BundledReader()).load()
    if kind in ("dpr", "extractive"):
        from searchain_graph.ir.readers.dpr import DPRReader
        from searchain_graph.ir.readers.extractive import ExtractiveQAReader

        cls = DPRReader if kind == "dpr" else ExtractiveQAReader
        reader = cls(model) if model else cls()
        return reader.load()
    raise AssertionError(f"unhandled reader kind {kind!r}")  # check_reader_spec knows every kind
