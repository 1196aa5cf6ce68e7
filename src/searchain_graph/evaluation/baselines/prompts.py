r"""Prompts and demonstrations of the baselines of Section 4.1.2: CoT, Direct, Direct Retrieval, Self-Ask, IRCoT.

Written for this project, not quoted from the SearChain paper (which does not print its baselines'
prompts). Each follows the format of its own paper: chain-of-thought "Q:/A:" with "Let's think step
by step" and "So the answer is:" (Wei et al., 2022; Kojima et al., 2022); Self-Ask's "Are follow up
questions needed here:", "Follow up:", "Intermediate answer:" and "So the final answer is:" (Press
et al., 2023); IRCoT's "Wikipedia Title: <title>\n<text>" paragraphs before "Q:/A:" (Trivedi et al.,
2023). Every method shows two short demonstrations of the task family (:data:`BASELINE_DEMONSTRATIONS`),
rendered into its own format by the graphs of :mod:`searchain_graph.evaluation.baselines`, so that
small models see the format and large ones are not slowed by long prompts. Figure 8 (SearChain w/o
IR) is SearChain's own prompt, :data:`~searchain_graph.method.prompts.COQ_PROMPT_NO_IR`.

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

# --- Chain-of-Thought (Wei et al., 2022), with Kojima et al.'s "Let's think step by step" cue.
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

# --- Paragraph layout of IRCoT (Trivedi et al., 2023), shared by Direct Retrieval and IRCoT.
PARAGRAPH = "Wikipedia Title: {title}\n{text}"
"""One retrieved paragraph; a passage without a title is shown as its text alone."""

PARAGRAPH_SEPARATOR = "\n\n"
"""Between two paragraphs."""

NO_PARAGRAPHS = "(No paragraphs were found.)"
"""Shown in place of the paragraphs when retrieval returned nothing."""

# --- Direct Retrieval (the SearChain paper's "Direct": retrieve with the question, give the passages,
# answer); also IRCoT's "Direct Prompting" QA reader over the paragraphs it collected.
DIRECT_RETRIEVAL_PROMPT = """Answer the question using the paragraphs. {answer_format} Reply with the answer only.

{examples}

{paragraphs}

Q: {question}
A:"""
"""Retrieve-then-read prompt: the paragraphs, then the question."""

DIRECT_RETRIEVAL_EXAMPLE = "{paragraphs}\n\nQ: {question}\nA: {answer}"
"""One retrieve-then-read demonstration."""

IRCOT_READER_PROMPT = DIRECT_RETRIEVAL_PROMPT
"""IRCoT's final QA reader ("Direct Prompting" over all collected paragraphs, Section 3.2 of IRCoT)."""

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
