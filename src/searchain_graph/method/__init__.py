"""SearChain itself: Section 3 and Algorithm 1 of the paper, as a LangGraph graph.

Read it in this order: :mod:`~searchain_graph.method.graph` (Algorithm 1 as nodes and edges, and
what a step's requests return), :mod:`~searchain_graph.method.nodes` (the four steps),
:mod:`~searchain_graph.method.verdict` (``IR(q_i, a_i)``), :mod:`~searchain_graph.method.context`
(every setting, and the presets) and :mod:`~searchain_graph.method.prompts` (the paper's prompts).
What this package adds to the paper is in :mod:`~searchain_graph.method.adaptations`, one module
per ``Context`` switch. The rest is machinery: the state and its reducers (``state``), parsing a
reply (``parsing``), the final content (``final_content``), the step driver (``steps``,
``driver``, ``calls``, ``ir_tasks``), the review pause (``review``) and one run per thread
(``threads``).

It depends on :mod:`searchain_graph.ir` and :mod:`searchain_graph.llms`; nothing here imports
:mod:`searchain_graph.baselines`, :mod:`searchain_graph.evaluation` or :mod:`searchain_graph.cli`.
"""
