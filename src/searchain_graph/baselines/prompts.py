r"""Prompts and demonstrations of the baselines: Table 1 of the SearChain paper (Section 4.1.2), and IRCoT.

Written for this project, not quoted from the SearChain paper (which does not print its baselines'
prompts). Each follows the format of its own paper, and they are grouped by method, in this order:

* **CoT** (Wei et al., 2022; Kojima et al., 2022): "Q:/A:" with "Let's think step by step" and "So
  the answer is:" (:data:`COT_PROMPT`). **CoT-SC** (Wang et al., ICLR 2023) samples CoT's own
  prompt several times: no prompt of its own.
* **Direct** prompting, no retrieval (:data:`DIRECT_PROMPT`).
* **Recite-and-Answer** (Sun et al., ICLR 2023): "recite" a passage from memory, then answer from
  the recitation (:data:`RECITE_PROMPT`, :data:`RECITE_ANSWER_PROMPT`).
* IRCoT's paragraph layout, "Wikipedia Title: <title>\n<text>" before "Q:/A:" (Trivedi et al.,
  2023; :data:`PARAGRAPH`), shared by **Direct Retrieval** (:data:`DIRECT_RETRIEVAL_PROMPT`) and IRCoT.
* **Self-Ask** (Press et al., 2023): "Are follow up questions needed here:", "Follow up:",
  "Intermediate answer:" and "So the final answer is:", a search engine answering the follow-ups
  (:data:`SELF_ASK_PROMPT`); **without IR**, the model writes its own intermediate answers in one
  reply (:data:`SELF_ASK_NO_IR_PROMPT`).
* **IRCoT** (Trivedi et al., 2023): the next chain-of-thought sentence over the paragraphs so far
  (:data:`IRCOT_REASON_PROMPT`), then a direct QA reader over them (:data:`IRCOT_READER_PROMPT`).
* **Least-to-Most** (Zhou et al., ICLR 2023): decompose ("To answer the question ..., we need to
  know: ..."), then solve the sub-questions in order, each with the answers before it
  (:data:`LTM_DECOMPOSE_PROMPT`, :data:`LTM_SOLVE_PROMPT`).
* **ReAct** (Yao et al., ICLR 2023), text format: "Thought:", "Action: Search[...]" or
  "Action: Finish[...]", "Observation:" (:data:`REACT_PROMPT`); on LangChain's agent, its
  instruction as a system prompt and the search tool's description (:data:`REACT_AGENT_PROMPT`).
* **Verify-and-Edit** (Zhao et al., ACL 2023): a verifying question per rationale sentence, its
  answer from retrieved facts, the edited rationale, then the answer (:data:`VE_QUESTION_PROMPT`,
  :data:`VE_ANSWER_PROMPT`, :data:`VE_FINAL_PROMPT`).

Every method shows the same two short demonstrations of the task family
(:data:`BASELINE_DEMONSTRATIONS`), rendered into its own format by the graphs of
:mod:`searchain_graph.baselines`, so that small models see the format and large ones are not slowed
by long prompts. Figure 8 (SearChain w/o IR) is SearChain's own prompt,
:data:`~searchain_graph.method.prompts.COQ_PROMPT_NO_IR`.

Placeholders use :meth:`str.format` fields.
"""

from __future__ import annotations

from typing import NamedTuple


class Demonstration(NamedTuple):
    """One worked example, rendered into each baseline's format."""

    question: str
    paragraphs: tuple[tuple[str, str], ...]
    """``(title, text)`` of the supporting paragraphs (Direct Retrieval, IRCoT)."""
    follow_ups: tuple[tuple[str, str], ...]
    """``(follow-up question, intermediate answer)`` pairs (Self-Ask)."""
    reasoning: tuple[str, ...]
    """Chain-of-thought sentences, one fact each, before "So the answer is" (CoT, IRCoT)."""
    answer: str


_MULTIHOP_DEMOS = (
    Demonstration(
        question="Which magazine was started first, Arthur's Magazine or First for Women?",
        paragraphs=(
            (
                "Arthur's Magazine",
                "Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia.",
            ),
            (
                "First for Women",
                "First for Women is a woman's magazine published in the USA. The magazine was started in 1989.",
            ),
        ),
        follow_ups=(
            ("When was Arthur's Magazine started?", "1844"),
            ("When was First for Women started?", "1989"),
        ),
        reasoning=(
            "Arthur's Magazine was started in 1844.",
            "First for Women was started in 1989.",
            "1844 is earlier than 1989.",
        ),
        answer="Arthur's Magazine",
    ),
    Demonstration(
        question="In which country was the roller coaster Lost Gravity manufactured?",
        paragraphs=(
            (
                "Lost Gravity (roller coaster)",
                "Lost Gravity is a steel roller coaster at Walibi Holland in the Netherlands. It was manufactured by Mack Rides.",
            ),
            (
                "Mack Rides",
                "Mack Rides GmbH & Co KG is a German company based in Waldkirch that builds roller coasters and other amusement rides.",
            ),
        ),
        follow_ups=(
            ("Who manufactured Lost Gravity?", "Mack Rides"),
            ("Which country is Mack Rides from?", "Germany"),
        ),
        reasoning=("Lost Gravity was manufactured by Mack Rides.", "Mack Rides is a company from Germany."),
        answer="Germany",
    ),
)

_YESNO_DEMOS = (
    Demonstration(
        question="Is it common to see frost during some college commencements?",
        paragraphs=(
            ("Frost", "Frost forms when surfaces cool below freezing. In temperate climates it is common in winter."),
            (
                "Commencement",
                "In the United States, college commencement ceremonies are held in May or June, and many colleges also hold one in December.",
            ),
        ),
        follow_ups=(
            ("When is frost common?", "In winter"),
            ("When are college commencements held?", "In May, June and December"),
        ),
        reasoning=(
            "Frost is common in winter.",
            "Some college commencements are held in December, which is in winter.",
        ),
        answer="Yes",
    ),
    Demonstration(
        question="Would a pear sink in water?",
        paragraphs=(
            ("Pear", "The pear is a sweet fruit. A fresh pear has a density of about 0.6 g/cm3."),
            ("Water", "Pure water has a density of about 1 g/cm3. Objects that are less dense than water float."),
        ),
        follow_ups=(
            ("What is the density of a pear?", "About 0.6 g/cm3"),
            ("What is the density of water?", "About 1 g/cm3"),
        ),
        reasoning=(
            "The density of a pear is about 0.6 g/cm3.",
            "Water has a density of about 1 g/cm3, so a pear is less dense than water and floats.",
        ),
        answer="No",
    ),
)

_FACT_DEMOS = (
    Demonstration(
        question="Nicholas Brody is a character on Homeland.",
        paragraphs=(
            (
                "Homeland (TV series)",
                "Homeland is an American television series. Its main characters include CIA officer Carrie Mathison and Marine sergeant Nicholas Brody.",
            ),
        ),
        follow_ups=(
            ("What is Homeland?", "An American television series"),
            ("Is Nicholas Brody a character on Homeland?", "Yes, he is one of its main characters"),
        ),
        reasoning=("Homeland is an American television series.", "Nicholas Brody is one of its main characters."),
        answer="SUPPORTS",
    ),
    Demonstration(
        question="Telemundo is an English-language television network.",
        paragraphs=(
            ("Telemundo", "Telemundo is an American Spanish-language television network owned by NBCUniversal."),
        ),
        follow_ups=(("What language does Telemundo broadcast in?", "Spanish"),),
        reasoning=("Telemundo is a Spanish-language television network, not an English-language one.",),
        answer="REFUTES",
    ),
)

_LONGFORM_DEMOS = (
    Demonstration(
        question="What causes the trail behind jets at high altitude?",
        paragraphs=(
            (
                "Contrail",
                "Contrails are line-shaped clouds produced by aircraft engine exhaust. The water vapour in the hot exhaust condenses and freezes into ice crystals in the cold air at high altitude.",
            ),
        ),
        follow_ups=(
            ("What is the trail behind jets called?", "A contrail, a cloud made by the engines' exhaust"),
            ("How do contrails form?", "The water vapour in the hot exhaust condenses and freezes in the cold air"),
        ),
        reasoning=(
            "The trail is a contrail, a cloud formed from the engines' exhaust.",
            "The exhaust is hot and full of water vapour, and the air at high altitude is very cold.",
        ),
        answer="The trail is a contrail: the hot exhaust of the jet engines contains a lot of water vapour, and when "
        "it meets the very cold air at high altitude the vapour condenses and freezes into tiny ice crystals, which "
        "form a thin cloud behind the plane.",
    ),
    Demonstration(
        question="Why is the sky blue?",
        paragraphs=(
            (
                "Rayleigh scattering",
                "Rayleigh scattering is the scattering of light by particles much smaller than its wavelength, such as air molecules. It is much stronger for short (blue) wavelengths than for long (red) ones.",
            ),
        ),
        follow_ups=(
            ("What scatters sunlight in the atmosphere?", "Air molecules, by Rayleigh scattering"),
            ("Which colours are scattered most?", "Short wavelengths such as blue"),
        ),
        reasoning=(
            "Sunlight is scattered by the molecules of the air.",
            "This Rayleigh scattering is much stronger for blue light than for red light.",
        ),
        answer="Sunlight contains every colour, but the molecules of the air scatter short, blue wavelengths much "
        "more strongly than long, red ones. This scattered blue light reaches our eyes from every direction, so the "
        "whole sky looks blue.",
    ),
)

BASELINE_DEMONSTRATIONS: dict[str, tuple[Demonstration, ...]] = {
    "multihop": _MULTIHOP_DEMOS,
    "slot_filling": _MULTIHOP_DEMOS,
    "yesno": _YESNO_DEMOS,
    "fact": _FACT_DEMOS,
    "longform": _LONGFORM_DEMOS,
}
"""Two demonstrations per task family, shared by every baseline."""

BASELINE_ANSWER_FORMATS: dict[str, str] = {
    "multihop": "The answer is a short phrase: a name, a place, a date or a number.",
    "slot_filling": "The answer is a short phrase: a name, a place, a date or a number.",
    "yesno": 'The answer can only be "Yes" or "No".',
    "fact": 'The question is a claim: the answer can only be "SUPPORTS" or "REFUTES".',
    "longform": "The answer is a paragraph of a few sentences that explains it.",
}
"""The task-aware answer instruction, ``{answer_format}`` in every baseline prompt."""

BASELINE_EXAMPLE_SEPARATOR = "\n\n"
"""Between two rendered demonstrations."""

# --- Chain-of-Thought (Wei et al., 2022), with Kojima et al.'s "Let's think step by step" cue; CoT-SC
# (Wang et al., 2023) samples this same prompt several times and has no prompt of its own.
COT_PROMPT = """Answer the question. Think step by step, then end with "So the answer is: <answer>." {answer_format}

{examples}

Q: {question}
A: Let's think step by step."""
"""Few-shot chain-of-thought, no retrieval."""

COT_EXAMPLE = "Q: {question}\nA: Let's think step by step. {reasoning} So the answer is: {answer}."
"""One CoT demonstration; ``reasoning`` is the sentences joined by spaces."""

# --- Direct prompting, no retrieval (IRCoT's "NoR" / the SearChain paper's closed-book setting).
DIRECT_PROMPT = """Answer the question. {answer_format} Reply with the answer only.

{examples}

Q: {question}
A:"""
"""Direct answer, no retrieval."""

DIRECT_EXAMPLE = "Q: {question}\nA: {answer}"
"""One direct demonstration."""

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

# --- Paragraph layout of IRCoT (Trivedi et al., 2023), shared by Direct Retrieval and IRCoT.
PARAGRAPH = "Wikipedia Title: {title}\n{text}"
"""One retrieved paragraph; a passage without a title is shown as its text alone."""

PARAGRAPH_SEPARATOR = "\n\n"
"""Between two paragraphs."""

NO_PARAGRAPHS = "(No paragraphs were found.)"
"""Shown in place of the paragraphs when retrieval returned nothing."""

# --- Direct Retrieval (the SearChain paper's "Direct": retrieve with the question, give the passages,
# answer); also IRCoT's "Direct Prompting" QA reader over the paragraphs it collected (below).
DIRECT_RETRIEVAL_PROMPT = """Answer the question using the paragraphs. {answer_format} Reply with the answer only.

{examples}

{paragraphs}

Q: {question}
A:"""
"""Retrieve-then-read prompt: the paragraphs, then the question."""

DIRECT_RETRIEVAL_EXAMPLE = "{paragraphs}\n\nQ: {question}\nA: {answer}"
"""One retrieve-then-read demonstration."""

# --- Self-Ask (Press et al., 2023), with a search engine answering the follow-up questions.
SELF_ASK_PROMPT = """Answer the question by asking simpler follow up questions, one at a time. Write each \
one after "Follow up:" and stop: a search engine gives its "Intermediate answer:". When you can answer, \
write "So the final answer is: <answer>". {answer_format}

{examples}

Question: {question}
Are follow up questions needed here:"""
"""First Self-Ask message; the model's reply continues the last line."""

SELF_ASK_EXAMPLE = (
    "Question: {question}\nAre follow up questions needed here: Yes.\n{follow_ups}\nSo the final answer is: {answer}"
)
"""One Self-Ask demonstration; ``follow_ups`` is :data:`SELF_ASK_STEP` lines."""

SELF_ASK_STEP = "Follow up: {question}\nIntermediate answer: {answer}"
"""One follow-up question and its intermediate answer."""

SELF_ASK_INTERMEDIATE = "Intermediate answer: {answer}"
"""The message that returns a follow-up's answer to the model."""

SELF_ASK_FORCE_FINAL = """Intermediate answer: {answer}
No more follow up questions can be asked. Write the final answer now, starting with "So the final answer is:"."""
"""The message that returns the last allowed follow-up's answer (the step limit is reached)."""

SELF_ASK_READ_PROMPT = """Passage: {passage}

Question: {question}

Answer the question with a short phrase from the passage. If the passage does not answer it, answer from \
what you know."""
"""The LLM answers a follow-up from its top-1 passage (when no reader gives an answer)."""

SELF_ASK_NO_PASSAGE = "(No passage was found.)"
"""Shown in place of the passage when retrieval returned nothing."""

# --- Self-Ask without IR (Press et al., 2023): the model answers its own follow-ups.
SELF_ASK_NO_IR_PROMPT = """Answer the question by asking simpler follow up questions, one at a time. Write \
each after "Follow up:" and answer it yourself after "Intermediate answer:". When you can answer, write \
"So the final answer is: <answer>". {answer_format}

{examples}

Question: {question}
Are follow up questions needed here:"""
"""Self-Ask in one reply: follow-ups and intermediate answers all from the model."""

# --- IRCoT (Trivedi et al., 2023): the "reason" step writes the next chain-of-thought sentence.
IRCOT_REASON_PROMPT = """Answer the question by reasoning step by step over the paragraphs, one fact per \
sentence. Continue the answer after "A:" with its next sentence only. When you know the answer, write \
"So the answer is: <answer>." {answer_format}

{examples}

{paragraphs}

Q: {question}
A: {cot}"""
"""IRCoT's reasoning prompt: paragraphs collected so far, the question and the CoT so far."""

IRCOT_EXAMPLE = "{paragraphs}\n\nQ: {question}\nA: {reasoning} So the answer is: {answer}."
"""One IRCoT demonstration (its paragraphs, then the whole chain of thought)."""

IRCOT_READER_PROMPT = DIRECT_RETRIEVAL_PROMPT
"""IRCoT's final QA reader ("Direct Prompting" over all collected paragraphs, Section 3.2 of IRCoT)."""

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

# --- ReAct on LangChain's agent (create_agent): the tool call is the action, its result the observation.
REACT_AGENT_PROMPT = """Answer the question. The search tool searches the knowledge source and returns its \
most relevant paragraph: search for one fact at a time, as often as you need, and reason about what each \
search returned. When you know the answer, reply without calling a tool and end with "So the answer is: \
<answer>." {answer_format}"""
"""The agent's system prompt (ReAct's instruction, in tool-calling form)."""

REACT_AGENT_TOOL = "Search the knowledge source; returns its most relevant paragraph for the query."
"""The search tool's description, as the model sees it."""

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
