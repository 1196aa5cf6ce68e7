"""Readers: extract an answer *g* from the top-1 passage with a confidence *f* (Section 3.3).

* :mod:`~searchain_graph.ir.readers.base`: the ``Reader`` interface, batched reading, the
  log-odds confidence scale;
* :mod:`~searchain_graph.ir.readers.llm`: ``LLMReader``, the chat model as reader;
* :mod:`~searchain_graph.ir.readers.spans`: span decoding, batch planning and passage windows
  shared by the extractive readers (no model);
* :mod:`~searchain_graph.ir.readers.extractive`: the extractive readers' shared base and
  ``ExtractiveQAReader`` (any SQuAD-style model);
* :mod:`~searchain_graph.ir.readers.dpr`: ``DPRReader`` (the paper's reader);
* :mod:`~searchain_graph.ir.readers.bundled`: ``BundledReader``, a small DPR reader shipped in
  the package, the offline default;
* :mod:`~searchain_graph.ir.readers.load`: readers by name, for the command line.
"""

DEFAULT_READER = "bundled"
"""The reader spec used when none is given: the reader shipped in the package (offline)."""
