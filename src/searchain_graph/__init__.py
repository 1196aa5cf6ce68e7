"""searchain-graph: Search-in-the-Chain (Xu et al., WWW 2024) for LangChain and LangGraph.

The main entry point is :func:`create_searchain_graph`, which returns a compiled
LangGraph graph::

    from searchain_graph import create_searchain_graph, BM25Retriever, BundledReader
    graph = create_searchain_graph(llm, BM25Retriever.from_files("corpus.jsonl"), BundledReader())
    out = graph.invoke({"question": "Where was the performer of Spirit If... born?"})
    print(out["final_content"])

The names below are imported on first use (PEP 562), so that ``import searchain_graph`` and the
``searchain`` command start in a fraction of a second; type checkers see the real imports.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from searchain_graph._version import __version__ as __version__

if TYPE_CHECKING:
    from searchain_graph.ir.bm25.retriever import BM25Retriever
    from searchain_graph.ir.colbert import ColBERTRetriever
    from searchain_graph.ir.corpus import CorpusFormatError, PassageStore, iter_corpus, load_corpus
    from searchain_graph.ir.demo import demo_corpus
    from searchain_graph.ir.index import build_index, load_index
    from searchain_graph.ir.index_dir import IndexSummary
    from searchain_graph.ir.readers.base import Passage, Reader, ReaderOutput
    from searchain_graph.ir.readers.bundled import BundledReader
    from searchain_graph.ir.readers.dpr import DPRReader
    from searchain_graph.ir.readers.extractive import ExtractiveQAReader
    from searchain_graph.ir.readers.llm import LLMReader
    from searchain_graph.ir.remote import RemoteRetrievalError, RemoteRetriever
    from searchain_graph.llms.chat_model import TransformersChatModel
    from searchain_graph.llms.hub import ModelNotFoundError
    from searchain_graph.llms.loading import load_chat_model
    from searchain_graph.method.context import Context
    from searchain_graph.method.graph import create_searchain_graph
    from searchain_graph.method.parsing import ParsedChain, extract_final_answer, normalize_answer, parse_chain
    from searchain_graph.method.question import InvalidQuestionError
    from searchain_graph.method.state import InputState, OutputState, Reference, SearChainState
    from searchain_graph.method.threads import ThreadBusyError
    from searchain_graph.method.tool import searchain_tool
    from searchain_graph.method.verdict import QueryMatcher, normalized_duplicate

_EXPORTS: dict[str, str] = {
    "BM25Retriever": "searchain_graph.ir.bm25.retriever",
    "BundledReader": "searchain_graph.ir.readers.bundled",
    "ColBERTRetriever": "searchain_graph.ir.colbert",
    "Context": "searchain_graph.method.context",
    "CorpusFormatError": "searchain_graph.ir.corpus",
    "DPRReader": "searchain_graph.ir.readers.dpr",
    "ExtractiveQAReader": "searchain_graph.ir.readers.extractive",
    "IndexSummary": "searchain_graph.ir.index_dir",
    "InputState": "searchain_graph.method.state",
    "InvalidQuestionError": "searchain_graph.method.question",
    "LLMReader": "searchain_graph.ir.readers.llm",
    "ModelNotFoundError": "searchain_graph.llms.hub",
    "OutputState": "searchain_graph.method.state",
    "ParsedChain": "searchain_graph.method.parsing",
    "Passage": "searchain_graph.ir.readers.base",
    "PassageStore": "searchain_graph.ir.corpus",
    "QueryMatcher": "searchain_graph.method.verdict",
    "Reader": "searchain_graph.ir.readers.base",
    "ReaderOutput": "searchain_graph.ir.readers.base",
    "Reference": "searchain_graph.method.state",
    "RemoteRetrievalError": "searchain_graph.ir.remote",
    "RemoteRetriever": "searchain_graph.ir.remote",
    "SearChainState": "searchain_graph.method.state",
    "ThreadBusyError": "searchain_graph.method.threads",
    "TransformersChatModel": "searchain_graph.llms.chat_model",
    "build_index": "searchain_graph.ir.index",
    "create_searchain_graph": "searchain_graph.method.graph",
    "demo_corpus": "searchain_graph.ir.demo",
    "extract_final_answer": "searchain_graph.method.parsing",
    "iter_corpus": "searchain_graph.ir.corpus",
    "load_chat_model": "searchain_graph.llms.loading",
    "load_corpus": "searchain_graph.ir.corpus",
    "load_index": "searchain_graph.ir.index",
    "normalize_answer": "searchain_graph.method.parsing",
    "normalized_duplicate": "searchain_graph.method.verdict",
    "parse_chain": "searchain_graph.method.parsing",
    "searchain_tool": "searchain_graph.method.tool",
}
"""Each public name and the module that defines it."""


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'searchain_graph' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = [
    "BM25Retriever",
    "BundledReader",
    "ColBERTRetriever",
    "Context",
    "CorpusFormatError",
    "DPRReader",
    "ExtractiveQAReader",
    "IndexSummary",
    "InputState",
    "InvalidQuestionError",
    "LLMReader",
    "ModelNotFoundError",
    "OutputState",
    "Passage",
    "PassageStore",
    "ParsedChain",
    "QueryMatcher",
    "Reader",
    "ReaderOutput",
    "Reference",
    "RemoteRetrievalError",
    "RemoteRetriever",
    "SearChainState",
    "ThreadBusyError",
    "TransformersChatModel",
    "build_index",
    "create_searchain_graph",
    "demo_corpus",
    "extract_final_answer",
    "iter_corpus",
    "load_chat_model",
    "load_corpus",
    "load_index",
    "normalize_answer",
    "normalized_duplicate",
    "parse_chain",
    "searchain_tool",
]
