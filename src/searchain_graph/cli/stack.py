"""The one way ``searchain ask``, ``serve`` and ``eval`` load their LLM, retriever and reader.

:func:`load_stack` reads the options the three commands share (``--index`` or ``--corpus``,
``--model``, ``--llm-backend``, ``--max-new-tokens``, ``--llm-timeout`` and ``--reader``) and
returns a :class:`Stack`; what differs between the commands is passed as arguments: how many
calls a local model decodes together, how many replies it remembers, the passages to index when
no corpus is named (``eval``: the dataset's own paragraphs), and whether a reader with weights
loads now. The heavy modules are imported when it runs, so that importing this module stays
cheap.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from searchain_graph.cli.arguments import rerank_of

if TYPE_CHECKING:
    from langchain_core.documents import Document
    from langchain_core.language_models import BaseChatModel
    from langchain_core.retrievers import BaseRetriever

    from searchain_graph.ir.readers.base import Reader

__all__ = ["Stack", "load_stack"]


def _silent(msg: str) -> None:
    """Say nothing."""


def _name_of(llm: BaseChatModel) -> str:
    """A chat model's name: its ``model_name`` or ``model``, else its class name."""
    return str(getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__)


@dataclass(frozen=True)
class Stack:
    """The LLM, retriever and reader a command runs with.

    Attributes:
        llm: The chat model (a local one's weights already loaded).
        retriever: The retriever (top 1 per query unless a method asks for more).
        reader: The reader SearChain and Self-Ask verify with.
        source: What the retriever searches: ``"index DIR"`` or ``"BM25 over N passages"``.
    """

    llm: BaseChatModel
    retriever: BaseRetriever
    reader: Reader
    source: str

    @property
    def model_name(self) -> str:
        """The LLM's name: its ``model_name`` or ``model``, else its class name."""
        return _name_of(self.llm)

    @property
    def local(self) -> bool:
        """Whether the LLM runs in this process (a :class:`~searchain_graph.llms.chat_model.TransformersChatModel`)."""
        from searchain_graph.llms.chat_model import TransformersChatModel

        return isinstance(self.llm, TransformersChatModel)

    @property
    def decoder(self) -> Any:
        """A local model's llama.cpp or ONNX decoder (its ``stats``), once loaded (``None`` otherwise)."""
        from searchain_graph.llms.chat_model import TransformersChatModel

        return self.llm.decoder if isinstance(self.llm, TransformersChatModel) else None


def load_stack(
    args: argparse.Namespace,
    *,
    say: Callable[[str], None] = _silent,
    max_batch_size: int = 1,
    llm_cache: Any = None,
    documents: Sequence[Document] | None = None,
    load_reader_now: bool = True,
) -> Stack:
    """Open the retriever, build and load the LLM, and build the reader, from a command's options.

    Args:
        args: ``--index`` or ``--corpus``, ``--model``, ``--llm-backend``, ``--max-new-tokens``,
            ``--llm-timeout``, ``--reader`` and ``--rerank`` (the retriever wrapped in
            :class:`~searchain_graph.ir.reranked.ReaderReranked`).
        say: Where the progress of loading goes (how long each part took).
        max_batch_size: Local models: calls decoded together.
        llm_cache: LangChain's LLM cache (a ``BaseCache``) for the chat model; ``None``: none.
        documents: Passages to index with BM25 when neither ``--index`` nor ``--corpus`` is given
            (``None``: the demo corpus, :func:`~searchain_graph.ir.demo.demo_corpus`).
        load_reader_now: Load a reader with weights now rather than at its first reading.
    """
    from searchain_graph._text import redacted_url
    from searchain_graph.ir.bm25.retriever import BM25Retriever
    from searchain_graph.ir.index import load_index
    from searchain_graph.ir.readers.load import check_reader_spec, load_reader
    from searchain_graph.llms.chat_model import TransformersChatModel
    from searchain_graph.llms.loading import load_chat_model

    check_reader_spec(args.reader)  # a typo is one line now, not after the LLM has loaded
    started = time.perf_counter()
    retriever: BaseRetriever
    if args.index:
        retriever = load_index(args.index, k=1)
        shown = redacted_url(args.index)  # an index URL's password is shown nowhere (--index http://me:pw@host/)
        say(f"opened the index at {shown} in {time.perf_counter() - started:.1f} s")
        source = f"index {shown}"
    elif args.corpus or documents is not None:
        bm25 = (
            BM25Retriever.from_files(args.corpus, k=1)
            if args.corpus
            else BM25Retriever.from_documents(documents or [], k=1)
        )
        say(f"indexed {len(bm25)} passages in {time.perf_counter() - started:.1f} s")
        retriever, source = bm25, f"BM25 over {len(bm25)} passages"
    else:
        from searchain_graph.ir.demo import demo_corpus

        bm25 = BM25Retriever.from_files(demo_corpus(), k=1)
        say(f"no --corpus or --index: searching the demo corpus ({len(bm25)} passages)")
        retriever, source = bm25, f"BM25 over the demo corpus's {len(bm25)} passages"
    t0 = time.perf_counter()
    llm = load_chat_model(
        args.model,
        max_new_tokens=args.max_new_tokens,
        max_batch_size=max_batch_size,
        backend=args.llm_backend,
        timeout=args.llm_timeout,
        cache=llm_cache,
    )
    if isinstance(llm, TransformersChatModel):
        llm.load()
    say(f"loaded {_name_of(llm)} in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    reader = load_reader(args.reader, llm)
    load = getattr(reader, "load", None)
    if load_reader_now and callable(load):  # a reader with weights loads now, not in its first reading
        load()
        say(f"loaded the {args.reader.split(':')[0]} reader in {time.perf_counter() - t0:.1f} s")
    depth = rerank_of(args)
    if depth:  # every method gets the same re-ranked passages
        from searchain_graph.ir.reranked import ReaderReranked

        retriever = ReaderReranked(retriever=retriever, reader=reader, depth=depth)
        source += f", its top {depth} re-ranked by the reader"
    return Stack(llm, retriever, reader, source)
