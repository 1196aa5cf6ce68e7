"""Information retrieval: the IR side of SearChain's Figure 2.

* :mod:`~searchain_graph.ir.corpus`: corpus files (JSONL, TSV, QA datasets' paragraphs) and the
  on-disk passage store;
* :mod:`~searchain_graph.ir.bm25`: BM25 (tokenising, the bounded-memory build, the index and its
  queries, its LangChain retriever);
* :mod:`~searchain_graph.ir.colbert` (ColBERTv2 through RAGatouille) and its compatibility shim
  :mod:`~searchain_graph.ir._ragatouille_compat`;
* :mod:`~searchain_graph.ir.index_dir` (the index directory format) and
  :mod:`~searchain_graph.ir.index` (``build_index``/``load_index`` over every retriever);
* :mod:`~searchain_graph.ir.readers`: the readers that extract *g* with a confidence *f*.

It depends only on :mod:`searchain_graph.llms` (model loading); the method sits above it.
"""
