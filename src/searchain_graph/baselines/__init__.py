r"""The paper's baselines as LangGraph graphs sharing SearChain's LLM, retriever and reader.

One factory per method; each returns a compiled graph with input ``{"question": str}`` and
output :class:`MethodOutput` (the keys ``question``, ``answer``, ``final_content``, ``rounds``,
``usage`` and ``warnings`` mean what they mean in SearChain's output; ``passages`` are the
retrieved passages the method used)::

    create_cot_graph(llm)                        # CoT: few-shot chain of thought, no retrieval
    create_direct_graph(llm)                     # direct answer, no retrieval
    create_direct_retrieval_graph(llm, ret)      # the paper's "Direct Retrieval": top-k, then answer
    create_self_ask_graph(llm, ret, reader)      # Self-Ask with a search engine (Press et al., 2023)
    create_ircot_graph(llm, ret)                 # IRCoT (Trivedi et al., 2023)
    create_searchain_no_ir_graph(llm)            # SearChain w/o IR (Figure 8)
    create_cot_sc_graph(llm)                     # CoT-SC: sampled chains, majority vote (Wang et al., 2023)
    create_recite_graph(llm)                     # Recite-and-Answer (Sun et al., 2023)
    create_least_to_most_graph(llm)              # Least-to-Most (Zhou et al., 2023)
    create_self_ask_no_ir_graph(llm)             # Self-Ask without IR (Press et al., 2023)
    create_react_graph(llm, ret)                 # ReAct, text format, CoT-SC backoff (Yao et al., 2023)
    create_react_agent_graph(llm, ret)           # ReAct on LangChain's create_agent, a search tool
    create_dsp_graph(llm, ret)                   # DSP: DSPy's multi-hop program via the dspy package
    create_verify_and_edit_graph(llm, ret)       # Verify-and-Edit: CoT-SC, split votes edited (Zhao et al., 2023)

The other SearChain ablations are ``create_searchain_graph(..., verification=False)`` and
``completion=False``.

Baselines are methods, like SearChain: this package sits beside :mod:`searchain_graph.method`, on
its layer, and imports only it, :mod:`searchain_graph.ir` and :mod:`searchain_graph.llms`, never
the evaluation that runs them. ``searchain eval`` finds each factory through its record in
:data:`searchain_graph.evaluation.methods.METHODS`; a new baseline is a module here plus one
record there (``docs/evaluation.md``, "Adding a baseline").

Modules, one per method family:

* :mod:`~searchain_graph.baselines.prompting`: no retrieval: CoT (Wei et al., 2022;
  Kojima et al., 2022), direct prompting and SearChain w/o IR (Xu et al., 2024, Figure 8);
* :mod:`~searchain_graph.baselines.direct_retrieval`: the SearChain paper's "Direct
  Retrieval" (retrieve with the question, then answer);
* :mod:`~searchain_graph.baselines.self_ask`: Self-Ask (Press et al., 2023);
* :mod:`~searchain_graph.baselines.ircot`: IRCoT (Trivedi et al., 2023);
* :mod:`~searchain_graph.baselines.voting`: CoT-SC and Recite-and-Answer (sampled
  paths and a vote); :mod:`~searchain_graph.baselines.decomposition`: Least-to-Most and
  Self-Ask w/o IR; :mod:`~searchain_graph.baselines.react`: ReAct (text);
  :mod:`~searchain_graph.baselines.react_agent`: ReAct on LangChain's agent;
  :mod:`~searchain_graph.baselines.verify_edit`: Verify-and-Edit;
  :mod:`~searchain_graph.baselines.dsp`: DSP, run by the ``dspy`` package (imported on use);
* :mod:`~searchain_graph.baselines.prompts`: their prompts and demonstrations, grouped by method;
* :mod:`~searchain_graph.baselines.common`: the shared state, answer parsing and
  paragraph rendering; :mod:`~searchain_graph.baselines.driver`: how a baseline is
  built on SearChain's step protocol (its settings, its driver, the shared steps and the graph).

Every node is a step, written as SearChain's are (:mod:`searchain_graph.method.steps`): a
generator ``(state, settings)`` that yields ``Generate`` (LLM), ``Retrieve`` and ``Read``
requests and returns its update, so one body serves ``invoke`` and ``ainvoke``. A
``StepDriver`` bound to the method's LLM, retriever and reader performs the requests, traces
them, adds their cost to the step's ``usage`` (the state sums it), starts a new run at the entry
step and writes ``rounds`` where a step opens a round. ReAct on LangChain's agent and DSP run a
whole program in one step and return its cost themselves.

Design choices (see each factory for details):

* **Self-Ask** answers each follow-up from the top-1 passage retrieved for it: with the
  reader's *g* when a reader is given and *g* is non-empty, otherwise by asking the LLM to
  read that passage (:data:`~searchain_graph.baselines.prompts.SELF_ASK_READ_PROMPT`).
  Press et al. used a search engine's answer box; the reader's span is the closest analogue, the
  LLM reading the snippet is their fallback. After ``max_steps`` follow-ups the model is told to
  answer.
* **IRCoT** retrieves K paragraphs with the question, then alternates one chain-of-thought
  sentence (the first sentence of the reply, cut at a newline) and K more paragraphs retrieved
  with that sentence, keeping at most ``max_paragraphs`` (the oldest are dropped). It stops at a
  sentence containing "answer is", at an empty sentence, or after ``max_steps`` sentences. The
  answer is then read by a direct QA prompt over the collected paragraphs (IRCoT's "Direct
  Prompting" reader, ``answer_mode="reader"``) or parsed from the chain of thought
  (``answer_mode="cot"``, which falls back to reading when the chain states no answer).

Every LLM call, retrieval and reading is labelled with its step (``cot_generation``,
``direct_answer``, ``coq_generation``, ``self_ask_generation``, ``follow_up_answer``, ``reason``,
``answer``, ``retrieve``, ``read``, ...), its round and its method (``searchain_step``,
``searchain_round`` and ``searchain_method`` in its metadata), like SearChain's. A retrieval's or
reading's run is named after its step unless it runs in the node of that name (a trace shows no
name twice); an LLM call's run keeps the model's name.
"""

from searchain_graph.baselines.common import MethodOutput, MethodState, final_answer, reasoning_steps
from searchain_graph.baselines.decomposition import create_least_to_most_graph, create_self_ask_no_ir_graph
from searchain_graph.baselines.direct_retrieval import create_direct_retrieval_graph
from searchain_graph.baselines.dsp import create_dsp_graph
from searchain_graph.baselines.ircot import create_ircot_graph, first_sentence
from searchain_graph.baselines.prompting import (
    create_cot_graph,
    create_direct_graph,
    create_searchain_no_ir_graph,
)
from searchain_graph.baselines.react import create_react_graph
from searchain_graph.baselines.react_agent import create_react_agent_graph
from searchain_graph.baselines.self_ask import create_self_ask_graph
from searchain_graph.baselines.verify_edit import create_verify_and_edit_graph
from searchain_graph.baselines.voting import create_cot_sc_graph, create_recite_graph
from searchain_graph.method.question import InvalidQuestionError

__all__ = [
    "InvalidQuestionError",
    "MethodOutput",
    "MethodState",
    "create_cot_graph",
    "create_cot_sc_graph",
    "create_direct_graph",
    "create_direct_retrieval_graph",
    "create_dsp_graph",
    "create_ircot_graph",
    "create_least_to_most_graph",
    "create_react_agent_graph",
    "create_react_graph",
    "create_recite_graph",
    "create_searchain_no_ir_graph",
    "create_self_ask_graph",
    "create_self_ask_no_ir_graph",
    "create_verify_and_edit_graph",
    "final_answer",
    "first_sentence",
    "reasoning_steps",
]
