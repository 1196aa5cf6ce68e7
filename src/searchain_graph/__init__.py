"""searchain-graph: Search-in-the-Chain (Xu et al., WWW 2024) for LangChain and LangGraph.

The main entry point is :func:`create_searchain_graph`, which returns a compiled
LangGraph graph::

    from searchain_graph import create_searchain_graph, BM25Retriever, LLMReader
    graph = create_searchain_graph(llm, BM25Retriever.from_files("corpus.jsonl"), LLMReader(llm))
    out = graph.invoke({"question": "Where was the performer of Spirit If... born?"})
    print(out["final_content"])
"""

from searchain_graph._version import __version__ as __version__
from searchain_graph.ir.bm25_retriever import BM25Retriever
from searchain_graph.ir.colbert import ColBERTRetriever
from searchain_graph.ir.corpus import CorpusFormatError, PassageStore, iter_corpus, load_corpus
from searchain_graph.ir.index import build_index, load_index
from searchain_graph.ir.index_dir import IndexSummary
from searchain_graph.ir.readers.base import Reader, ReaderOutput
from searchain_graph.ir.readers.dpr import DPRReader
from searchain_graph.ir.readers.extractive import ExtractiveQAReader
from searchain_graph.ir.readers.llm import LLMReader
from searchain_graph.llms.chat_model import TransformersChatModel, load_chat_model
from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.method.context import SearChainContext
from searchain_graph.method.graph import create_searchain_graph
from searchain_graph.method.parsing import ParsedChain, extract_final_answer, normalize_answer, parse_chain
from searchain_graph.method.question import InvalidQuestionError
from searchain_graph.method.state import InputState, OutputState, Reference, SearChainState
from searchain_graph.method.verdict import QueryMatcher, normalized_duplicate

__all__ = [
    "BM25Retriever",
    "ColBERTRetriever",
    "CorpusFormatError",
    "DPRReader",
    "ExtractiveQAReader",
    "IndexSummary",
    "InputState",
    "InvalidQuestionError",
    "LLMReader",
    "ModelNotFoundError",
    "OutputState",
    "PassageStore",
    "ParsedChain",
    "QueryMatcher",
    "Reader",
    "ReaderOutput",
    "Reference",
    "SearChainContext",
    "SearChainState",
    "TransformersChatModel",
    "build_index",
    "create_searchain_graph",
    "extract_final_answer",
    "iter_corpus",
    "load_chat_model",
    "load_corpus",
    "load_index",
    "normalize_answer",
    "normalized_duplicate",
    "parse_chain",
]
