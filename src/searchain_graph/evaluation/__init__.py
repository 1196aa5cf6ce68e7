"""Evaluation: the paper's Section 4 as a harness around the method.

* the datasets in their native formats: :mod:`~searchain_graph.evaluation.datasets` (the datasets,
  their tasks and the ``Example`` layout), :mod:`~searchain_graph.evaluation.dataset_formats` (one
  record of each native format read) and :mod:`~searchain_graph.evaluation.dataset_loading`
  (loading a dataset file);
* :mod:`~searchain_graph.evaluation.metrics`: cover-EM, EM, F1, ROUGE-L;
* :mod:`~searchain_graph.evaluation.methods`: the registry of every method ``searchain eval`` runs,
  one :class:`~searchain_graph.evaluation.method_spec.MethodSpec` record each (name, description,
  graph builder, how its reasoning steps are counted, what it uses and needs). The methods
  themselves are not evaluation: SearChain is :mod:`searchain_graph.method`, the baselines
  (IRCoT, Self-Ask, CoT, ...) are :mod:`searchain_graph.baselines`;
* :mod:`~searchain_graph.evaluation.harness`: resumable runs, one JSONL record per question and method;
* :mod:`~searchain_graph.evaluation.report`: the paper's Tables 1-5 and plots from the records;
* :mod:`~searchain_graph.evaluation.oracle`: verification and completion measured on gold chains.
"""
