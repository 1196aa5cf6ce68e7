r"""Prompts of the other baselines of the SearChain paper's Table 1 (Xu et al., 2024, Section 4.1.2).

Written for this project in the format of each method's own paper (the SearChain paper prints none
of its baselines' prompts), over the same two demonstrations per task family as the first
baselines (:data:`~searchain_graph.evaluation.baselines.prompts.BASELINE_DEMONSTRATIONS`):

* **CoT-SC** (Wang et al., ICLR 2023) samples CoT's own prompt
  (:data:`~searchain_graph.evaluation.baselines.prompts.COT_PROMPT`) several times: no prompt of its own.
* **Recite-and-Answer** (Sun et al., ICLR 2023): "recite" a passage from memory, then answer from
  the recitation (:data:`RECITE_PROMPT`, :data:`RECITE_ANSWER_PROMPT`).
* **Self-Ask without IR** (Press et al., 2023): the model writes its own intermediate answers in one
  reply (:data:`SELF_ASK_NO_IR_PROMPT`).
* **Least-to-Most** (Zhou et al., ICLR 2023): decompose ("To answer the question ..., we need to
  know: ..."), then solve the sub-questions in order, each with the answers before it
  (:data:`LTM_DECOMPOSE_PROMPT`, :data:`LTM_SOLVE_PROMPT`).
* **ReAct** (Yao et al., ICLR 2023), text format: "Thought:", "Action: Search[...]" or
  "Action: Finish[...]", "Observation:" (:data:`REACT_PROMPT`); on LangChain's agent, its
  instruction as a system prompt and the search tool's description (:data:`REACT_AGENT_PROMPT`).
* **Verify-and-Edit** (Zhao et al., ACL 2023): a verifying question per rationale sentence, its
  answer from retrieved facts, the edited rationale, then the answer (:data:`VE_QUESTION_PROMPT`,
  :data:`VE_ANSWER_PROMPT`, :data:`VE_FINAL_PROMPT`).

Placeholders use :meth:`str.format` fields.
"""

from __future__ import annotations

# --- Recite-and-Answer (Sun et al., 2023): recitation, then the answer from it.
RECITE_PROMPT = """Recite a paragraph that you remember and that answers the question. Write it after \
"Recitation:". Do not answer the question yet.

{examples}

Question: {question}
Recitation:"""
"""Step 1: the model recites a passage from its own memory."""

RECITE_EXAMPLE = "Question: {question}\nRecitation: {recitation}"
"""One recitation demonstration (the demonstration's paragraphs, joined)."""

RECITE_ANSWER_PROMPT = """Answer the question from the recitation. {answer_format} Reply with the answer only.

{examples}

Recitation: {recitation}
Q: {question}
A:"""
"""Step 2: the answer, read from the recitation."""

RECITE_ANSWER_EXAMPLE = "Recitation: {recitation}\nQ: {question}\nA: {answer}"
"""One answer-from-recitation demonstration."""

# --- Self-Ask without IR (Press et al., 2023): the model answers its own follow-ups.
SELF_ASK_NO_IR_PROMPT = """Answer the question by asking simpler follow up questions, one at a time. Write \
each after "Follow up:" and answer it yourself after "Intermediate answer:". When you can answer, write \
"So the final answer is: <answer>". {answer_format}

{examples}

Question: {question}
Are follow up questions needed here:"""
"""Self-Ask in one reply: follow-ups and intermediate answers all from the model."""

# --- Least-to-Most (Zhou et al., 2023): decomposition, then sequential solving.
LTM_DECOMPOSE_PROMPT = """Break the question down into the simpler questions that must be answered \
first, each in double quotes, easiest first.

{examples}

Q: {question}
A: To answer the question "{question}", we need to know:"""
"""Stage 1: decomposition into quoted sub-questions."""

LTM_DECOMPOSE_EXAMPLE = 'Q: {question}\nA: To answer the question "{question}", we need to know: {sub_questions}.'
"""One decomposition demonstration; ``sub_questions`` is the quoted questions joined by ", "."""

LTM_SOLVE_PROMPT = """Answer the last question, using the answers to the questions before it. \
{answer_format} Reply with the answer to the last question only.

{examples}

{solved}Q: {question}
A:"""
"""Stage 2: one sub-question (or, last, the question) after the ones already solved."""

LTM_SOLVE_EXAMPLE = "{solved}Q: {question}\nA: {answer}"
"""One solving demonstration: its sub-questions solved, then the question."""

LTM_SOLVED = "Q: {question}\nA: {answer}\n"
"""A solved sub-question in the context of the next."""

# --- ReAct (Yao et al., 2023), text format, with the retriever as the search action.
REACT_PROMPT = """Solve the question with interleaving Thought, Action, Observation steps. Thought can \
reason about the current situation. Action can be two types:
(1) Search[query], which searches the knowledge source and returns the most relevant paragraph.
(2) Finish[answer], which returns the answer and finishes the task.
{answer_format}

{examples}

Question: {question}
{scratchpad}"""
"""ReAct's prompt; ``scratchpad`` holds the Thought/Action/Observation lines so far."""

REACT_EXAMPLE = "Question: {question}\n{steps}"
"""One ReAct demonstration: its Thought/Action/Observation steps and the Finish action."""

REACT_STEP = "Thought {n}: {thought}\nAction {n}: {action}\n"
"""A thought and its action (the observation follows a Search)."""

REACT_OBSERVATION = "Observation {n}: {observation}\n"
"""What a Search action returned."""

REACT_NO_PASSAGE = "No paragraph was found. Try another search."
"""The observation of a search that found nothing."""

REACT_FINISH_HINT = "Thought {n}:"
"""Where the model continues the scratchpad."""

# --- Verify-and-Edit (Zhao et al., 2023): verifying questions, retrieved facts, edited rationale.
VE_QUESTION_PROMPT = """Write one question that checks the fact stated in the sentence. Reply with the \
question only.

Sentence: Arthur's Magazine was started in 1844.
Question: When was Arthur's Magazine started?

Sentence: Mack Rides is a company from Germany.
Question: Which country is Mack Rides from?

Sentence: {sentence}
Question:"""
"""Verifying-question generation for one rationale sentence (Zhao et al.'s first step)."""

VE_ANSWER_PROMPT = """Using the facts, answer the question in one sentence that states the fact.

Facts: {facts}
Question: {question}
Answer:"""
"""The edited rationale sentence: the verifying question answered from the retrieved facts."""

VE_FINAL_PROMPT = """Answer the question from the reasoning. {answer_format} End with "So the answer is: \
<answer>."

{examples}

Q: {question}
A: Let's think step by step. {rationale} So the answer is:"""
"""Answer re-generation after the rationale was edited."""

# --- ReAct on LangChain's agent (create_agent): the tool call is the action, its result the observation.
REACT_AGENT_PROMPT = """Answer the question. The search tool searches the knowledge source and returns its \
most relevant paragraph: search for one fact at a time, as often as you need, and reason about what each \
search returned. When you know the answer, reply without calling a tool and end with "So the answer is: \
<answer>." {answer_format}"""
"""The agent's system prompt (ReAct's instruction, in tool-calling form)."""

REACT_AGENT_TOOL = "Search the knowledge source; returns its most relevant paragraph for the query."
"""The search tool's description, as the model sees it."""
