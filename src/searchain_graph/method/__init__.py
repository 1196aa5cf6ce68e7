"""SearChain itself: Section 3 and Algorithm 1 of the paper, as a LangGraph graph.

* :mod:`~searchain_graph.method.state`: the graph's state, its reducers, and the plain-data records
  (chain nodes, references, branches of the Tree-of-Reasoning);
* :mod:`~searchain_graph.method.context`: the per-run knobs (``context_schema``) and the task families;
* :mod:`~searchain_graph.method.prompts`: the paper's prompts (Figures 3 and 8-12);
* :mod:`~searchain_graph.method.parsing`: reading a Chain-of-Query, citations and final answers;
* :mod:`~searchain_graph.method.verdict`: ``IR(q_i, a_i)``: pass, correction or completion;
* :mod:`~searchain_graph.method.calls`: what every LLM, retriever and reader call records;
* :mod:`~searchain_graph.method.nodes`: the steps of a round (CoQ generation, IR check, feedback,
  tracing);
* :mod:`~searchain_graph.method.graph`: :func:`~searchain_graph.method.graph.create_searchain_graph`.

It depends on :mod:`searchain_graph.ir` for the reader interface and passage text; nothing here
imports :mod:`searchain_graph.evaluation` or :mod:`searchain_graph.cli`.
"""
