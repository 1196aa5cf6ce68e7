"""BM25 over Snowball stems, built and queried in NumPy, saved as memory-mappable arrays.

The scoring is Lucene's BM25 (``k1 = 1.5``, ``b = 0.75``, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``)
over Snowball-stemmed words with English stopwords removed, the same scoring as ``bm25s``' default,
which the first version of this package used. The engine exists because building had to reach tens
of thousands of passages per second on two cores, and querying a few milliseconds at 100k passages,
which needed:

* **tokenising without a Python object per match**, and **counting in NumPy** per chunk of
  passages, in worker processes when the corpus is large;
* **a build in bounded memory**: sorted shards spilled to disk and merged by stem range, so a
  corpus of any size builds in a few GB;
* **precomputed scores** stored column-wise (one slice of passage ids and scores per stem), so a
  query adds up a few slices with ``np.bincount``.

An index is four ``.npy`` arrays and a JSON file with the vocabulary and parameters; loading
memory-maps the arrays, so it is instant and a large index is paged in on demand.

The modules, one concern each, each importing only the ones listed before it:

* :mod:`~searchain_graph.ir.bm25.tokenising`: text to words and words to stems, stopwords dropped,
  the same for passages and queries;
* :mod:`~searchain_graph.ir.bm25.build`: an index directory built from passage texts in bounded
  memory (counting, spilled shards, merge), and the names of the files an index is made of;
* :mod:`~searchain_graph.ir.bm25.index`: :class:`~searchain_graph.ir.bm25.index.BM25Index`, a built
  index: searching it (MaxScore pruning), saving it and loading it;
* :mod:`~searchain_graph.ir.bm25.retriever`:
  :class:`~searchain_graph.ir.bm25.retriever.BM25Retriever`, the index as a LangChain retriever, in
  memory or over an index directory.
"""
