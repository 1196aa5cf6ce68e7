"""Prompt templates of SearChain, quoted from the paper (Xu et al., WWW 2024, arXiv 2304.14732).

Every template names the figure or section it comes from. The wording is the
paper's; only the layout (line breaks, the paper's typos such as "exmaple", and
curly quotes that the PDF garbled) has been tidied. Two additions, both from the
authors' code rather than the paper, are marked where they appear:

* the CoQ prompts end by restating ``[Question]: "..."`` so that the model's
  reply starts with the chain for *this* question, as ``SearChain_w_IR.py`` does;
* the tracing prompt carries one worked example (the paper's own Figure 1/3
  example) so that a model that has not seen the CoQ prompt learns the ``[n]``
  citation format.

Placeholders use :meth:`str.format` fields.
"""

from __future__ import annotations

# --- Section 3.2, Figure 3 / Figures 9-12: the instruction shared by every CoQ prompt (with IR).
_COQ_INSTRUCTION = """Construct a global reasoning chain for this complex [Question] : "{question}" \
You should generate a query to the search engine based on what you already know at each step of \
the reasoning chain, starting with [Query].
If you know the answer for [Query], generate it starting with [Answer].
You can try to generate the final answer for the [Question] by referring to the [Query]-[Answer] \
pairs, starting with [Final Content].
If you don't know the answer, generate a query to search engine based on what you already know \
and do not know, starting with [Unsolved Query].
For example:
"""

# --- Figure 11: HotpotQA, MuSiQue, 2WikiMultiHopQA, zsRE and T-REx (with IR).
_MULTIHOP_EXAMPLES = """[Question]: "Where do greyhound buses that are in the birthplace of Spirit If...'s performer leave from?"
[Query 1]: Who is the performer of Spirit If... ?
If you don't know the answer:
[Unsolved Query]: Who is the performer of Spirit If... ?
If you know the answer:
[Answer 1]: The performer of Spirit If... is Kevin Drew.
[Query 2]: Where was Kevin Drew born?
If you don't know the answer:
[Unsolved Query]: Where was Kevin Drew born?
If you know the answer:
[Answer 2]: Toronto.
[Query 3]: Where do greyhound buses in Toronto leave from?
If you don't know the answer:
[Unsolved Query]: Where do greyhound buses in Toronto leave from?
If you know the answer:
[Answer 3]: Toronto Coach Terminal.
[Final Content]: The performer of Spirit If... is Kevin Drew [1]. Kevin Drew was born in Toronto [2]. \
Greyhound buses in Toronto leave from Toronto Coach Terminal [3]. So the final answer is Toronto Coach Terminal.

[Question]: "Which magazine was started first Arthur's Magazine or First for Women?"
[Query 1]: When was Arthur's Magazine started?
[Answer 1]: 1844.
[Query 2]: When was First for Women started?
[Answer 2]: 1989
[Final Content]: Arthur's Magazine started in 1844 [1]. First for Women started in 1989 [2]. \
So Arthur's Magazine was started first. So the answer is Arthur's Magazine.
"""

# --- Figure 10: StrategyQA (yes/no, with IR).
_YESNO_EXAMPLES = """[Question]: "Is it common to see frost during some college commencements?"
[Query 1]: What seasons can you expect see frost?
If you don't know the answer:
[Unsolved Query]: What seasons can you expect see frost?
Instruction: Please Stop your generation.
If you know the answer:
[Answer 1]: Winter.
[Query 2]: What months do college commencements occur?
If you don't know the answer:
[Unsolved Query]: What months do college commencements occur?
Instruction: Please Stop your generation.
If you know the answer:
[Answer 2]: December, May, and sometimes June.
[Query 3]: Do any of December, May, and sometimes June occur during winter?
If you don't know the answer:
[Unsolved Query]: Do any of December, May, and sometimes June occur during winter?
Instruction: Please Stop your generation.
If you know the answer:
[Answer 3]: December
[Question]: "Is it common to see frost during some college commencements?" (The answer can only be "Yes" or "No")
[Final Content]: You expect see frost in Winter [1]. College commencements occur on December, May, \
and sometimes June [2]. December, May, and sometimes June occur during winter [3]. So the final answer is Yes.

[Question]: "Would a pear sink in water?"
[Query 1]: What is the density of a pear?
[Answer 1]: 0.59 g/cm^3
[Query 2]: What is the density of water?
[Answer 2]: 1 g/cm^3
[Query 3]: Is 0.59 g/cm^3 greater than 1 g/cm^3?
[Answer 3]: No
[Question]: "Would a pear sink in water?" (Yes or No)
[Final Content]: The density of a pear is 0.59 g/cm^3 [1]. The density of water is 1 g/cm^3 [2]. \
0.59 g/cm^3 is not greater than 1 g/cm^3 [3]. So the final answer is No.
"""

# --- Figure 9: FEVER (fact checking, with IR). Its instruction differs from the others.
_FACT_INSTRUCTION = """Construct a global reasoning chain for this complex question [Question]:"{question}" \
and answer the question, and generate a query to the search engine based on what you already know at \
each step of the reasoning chain, starting with [Query]. You should generate the answer for each \
[Query], starting with [Answer].
You should generate the final answer for the [Question] by referring the [Query]-[Answer] pairs, \
starting with [Final Content].
If you don't know the answer, generate a query to the search engine based on what you already know \
and do not know, starting with [Unsolved Query] and please stop your generation.
For example:
"""

_FACT_EXAMPLES = """[Question]: "How many places of higher learning are in the city where the Yongle emperor greeted the person to whom the edict was addressed?"
[Query 1]: Who was the edict addressed to?
If you don't know the answer:
[Unsolved Query]: Who was the edict addressed to?
If you know the answer:
[Answer 1]: the Karmapa
[Query 2]: Where did the Yongle Emperor greet the Karmapa?
If you don't know the answer:
[Unsolved Query]: Where did the Yongle Emperor greet the Karmapa?
If you know the answer:
[Answer 2]: Nanjing
[Query 3]: How many places of higher learning are in Nanjing?
If you don't know the answer:
[Unsolved Query]: How many places of higher learning are in Nanjing?
If you know the answer:
[Answer 3]: 75
[Final Content]: The edict was addressed to Karmapa [1]. Yongle Emperor greet the Karampa in Nanjing [2]. \
There are 75 places of higher learning are in Nanjing [3]. So the final answer is 75.

[Question]: "Nicholas Brody is a character on Homeland. (SUPPORTS or REFUTES)?"
[Query 1]: What is Homeland?
[Answer 1]: Homeland is a television series.
[Query 2]: Is Nicholas Brody a character in Homeland?
[Answer 2]: Yes.
[Final Content]: Homeland is a television series [1]. Nicholas Brody is a character in Homeland [2]. \
So the final answer is SUPPORTS.

[Question]: "Brad Wilk helped co-found Rage in 1962. (SUPPORTS or REFUTES)?"
[Query 1]: Did Brad Wilk co-found Rage?
[Answer 1]: Yes
[Query 2]: Did Brad Wilk co-found Rage in 1962?
[Answer 2]: No, Rage was founded in 1991
[Final Content]: Brad Wilk did co-found Rage [1], but not in 1962 [2]. So the final answer is REFUTES.

[Question]: "Aristotle spent time in Athens. (SUPPORTS or REFUTES)?"
[Query 1]: Who is Aristotle?
[Answer 1]: Aristotle was a Greek philosopher.
[Query 2]: Did Aristotle spend time in Athens?
[Answer 2]: Yes, Aristotle studied and taught at the Academy in Athens for 20 years.
[Final Content]: Aristotle was a Greek philosopher who studied and taught at the Academy in Athens \
for 20 years [2]. So the final answer is SUPPORTS.

[Question]: "Telemundo is a English-language television network. (SUPPORTS or REFUTES)?"
[Query 1]: What is Telemundo?
[Answer 1]: Telemundo is a television network.
[Query 2]: Is Telemundo an English-language television network?
[Answer 2]: No, Telemundo is a Spanish-language television network.
[Final Content]: Telemundo is a television network [1], but it is not an English-language television \
network [2]. So the final answer is REFUTES.
"""

# --- Figure 12: ELI5 (long-form QA, with IR).
_LONGFORM_EXAMPLES = """[Question]: "What causes the trail behind jets at high altitude?"
[Query 1]: What is the trail behind jets at high altitude?
If you don't know the answer:
[Unsolved Query]: What is the trail behind jets at high altitude?
If you know the answer:
[Answer 1]: The trail behind jets at high altitude is commonly referred to as a contrail, which is \
short for "condensation trail." It is formed when the hot exhaust gases from a jet engine mix with the \
colder air at high altitudes, causing the water vapor in the air to condense and freeze into tiny ice crystals.
[Query 2]: Why do the hot exhaust gases mix with the colder air at high altitudes?
If you don't know the answer:
[Unsolved Query]: Why do the hot exhaust gases mix with the colder air at high altitudes?
If you know the answer:
[Answer 2]: The hot exhaust gases from a jet engine mix with the colder air at high altitudes due to \
the pressure difference between the engine exhaust and the surrounding air. At high altitudes, the air \
is much colder and thinner, which causes the exhaust gases to rapidly expand and cool, creating a \
turbulent wake behind the aircraft.
[Query 3]: Why does the water vapor in the air condense and freeze into ice crystals?
If you don't know the answer:
[Unsolved Query]: Why does the water vapor in the air condense and freeze into ice crystals?
If you know the answer:
[Answer 3]: The water vapor in the air condenses and freezes into ice crystals because the exhaust \
gases from the jet engine contain a significant amount of water vapor, which is heated to high \
temperatures in the engine. When the hot water vapor mixes with the cold air at high altitudes, it \
quickly loses heat and energy, causing the water vapor to condense into liquid droplets and then \
freeze into ice crystals.
[Final Content]: The trail behind jets at high altitude is formed when the hot exhaust gases from a \
jet engine mix with the colder air at high altitudes, causing the water vapor in the air to condense \
and freeze into tiny ice crystals. The exhaust gases mix with the colder air due to the pressure \
difference between the engine exhaust and the surrounding air, and the water vapor condenses and \
freezes because it is heated to high temperatures in the engine and then quickly loses heat and \
energy when mixed with the cold air at high altitudes.

[Question]: "In Trading Places (1983, Akroyd/Murphy) how does the scheme at the end of the movie work? Why would buying a lot of OJ at a high price ruin the Duke Brothers?"
[Query 1]: What is the scheme at the end of Trading Places?
[Answer 1]: In the movie, the main character, Billy Ray Valentine (Eddie Murphy), and his partner, \
Louis Winthorpe III (Dan Aykroyd), execute a plan to bankrupt the Duke Brothers by manipulating the \
frozen concentrated orange juice (FCOJ) futures market.
[Query 2]: How do Billy Ray and Louis manipulate the FCOJ futures market?
[Answer 2]: Billy Ray and Louis obtain insider information about the Department of Agriculture's \
upcoming crop report, which indicates that a harsh winter has destroyed much of the orange crop. They \
use this information to purchase FCOJ futures contracts at a low price before the report is released, \
and then they sell the contracts at a high price after the report's release, when the market has \
responded to the news of the crop damage.
[Query 3]: Why does buying a lot of OJ at a high price ruin the Duke Brothers?
[Answer 3]: The Duke Brothers, who are also investing in the FCOJ market, have bet that the orange \
crop will be abundant and that the price of FCOJ will remain low. However, Billy Ray and Louis's \
scheme drives up the price of FCOJ, causing the Duke Brothers to lose a significant amount of money \
and ultimately leading to their downfall.
[Final Content]: In Trading Places, Billy Ray Valentine and Louis Winthorpe III manipulate the FCOJ \
futures market by obtaining insider information about the crop report and purchasing contracts at a \
low price before selling them at a higher price after the report is released. The Duke Brothers, who \
have also invested in the market, lose money because they bet on an abundant orange crop and low FCOJ \
prices. However, Billy Ray and Louis's scheme causes the price of FCOJ to rise, which ruins the Duke \
Brothers and leads to their downfall.
"""

# Authors' code (SearChain_w_IR.py): the prompt ends by restating the question.
_QUESTION_CUE = '\n[Question]: "{question}"\n'

COQ_PROMPTS: dict[str, str] = {
    "multihop": _COQ_INSTRUCTION + _MULTIHOP_EXAMPLES + _QUESTION_CUE,
    # zsRE and T-REx share Figure 11 with the multi-hop datasets (see its caption).
    "slot_filling": _COQ_INSTRUCTION + _MULTIHOP_EXAMPLES + _QUESTION_CUE,
    "yesno": _COQ_INSTRUCTION + _YESNO_EXAMPLES + _QUESTION_CUE,
    "fact": _FACT_INSTRUCTION + _FACT_EXAMPLES + _QUESTION_CUE,
    "longform": _COQ_INSTRUCTION + _LONGFORM_EXAMPLES + _QUESTION_CUE,
}
"""First-round CoQ prompt per task family; format with ``question=``."""

QUESTION_SUFFIXES: dict[str, str] = {
    "yesno": ' (The answer can only be "Yes" or "No")',
    "fact": " (SUPPORTS or REFUTES)?",
}
"""Answer-format hints that Figures 9 and 10 attach to the question."""

# --- Figure 8: HotpotQA, MuSiQue, 2WikiMultiHopQA, zsRE and T-REx *without* IR ("SearChain w/o IR").
COQ_PROMPT_NO_IR = (
    """Construct a global reasoning chain for this complex question [Question]:"{question}" \
and answer the question, and generate a query to the search engine based on what you already know at \
each step of the reasoning chain, starting with [Query].
You should generate the answer for each [Query], starting with [Answer].
You should generate the final answer for the [Question] by referring the [Query]-[Answer] pairs, \
starting with [Final Content].
For example:
[Question]: "How many places of higher learning are in the city where the Yongle emperor greeted the person to whom the edict was addressed?"
[Query 1]: Who was the edict addressed to?
[Answer 1]: the Karmapa
[Query 2]: Where did the Yongle Emperor greet the Karmapa?
[Answer 2]: Nanjing
[Query 3]: How many places of higher learning are in Nanjing?
[Answer 3]: 75
[Final Content]: The edict was addressed to Karmapa [1]. Yongle Emperor greet the Karampa in Nanjing [2]. \
There are 75 places of higher learning are in Nanjing [3]. So the final answer is 75.

[Question]: "Which magazine was started first Arthur's Magazine or First for Women?"
[Query 1]: When was Arthur's Magazine started?
[Answer 1]: 1844.
[Query 2]: When was First for Women started?
[Answer 2]: 1989
[Final Content]: Arthur's Magazine started in 1844 [1]. First for Women started in 1989 [2]. \
So Arthur's Magazine was started first. So the final answer is Arthur's Magazine.
"""
    + _QUESTION_CUE
)
"""Figure 8: the CoQ prompt for the setting without information retrieval."""

# --- Section 3.3, Verification: "According to the Reference, the answer for q_i should be g, you can
# change your answer and continue constructing the reasoning chain for [Question]: Q. Reference: d_i."
CORRECTION_PROMPT = (
    "According to the Reference, the answer for {query} should be {answer}, you can change your "
    "answer and continue constructing the reasoning chain for [Question]: {question}\n"
    "Reference: {reference}"
)
"""Section 3.3, Verification: the prompt IR sends when it corrects a node."""

# --- Section 3.3, Completion: "... you can give your answer and continue constructing ...".
COMPLETION_PROMPT = (
    "According to the Reference, the answer for {query} should be {answer}, you can give your "
    "answer and continue constructing the reasoning chain for [Question]: {question}\n"
    "Reference: {reference}"
)
"""Section 3.3, Completion: the prompt IR sends for an ``[Unsolved Query]``."""

# --- Section 3.3, Tracing: "You can try to generate the final answer for the [Question] by referring
# to the [Query]-[Answer] pairs, starting with [Final Content]. [Query 1]: q_1. [Answer 1]: a_1 ..."
TRACING_INSTRUCTION = (
    "You can try to generate the final answer for the [Question] by referring to the "
    "[Query]-[Answer] pairs, starting with [Final Content]."
)
"""Section 3.3, Tracing: the instruction of the tracing prompt, verbatim."""

# One worked example, built from the paper's Figure 1/3 example (an addition; see module docstring).
TRACING_EXAMPLE = """[Question]: "Where do greyhound buses that are in the birthplace of Spirit If...'s performer leave from?"
[Query 1]: Who is the performer of Spirit If... ?
[Answer 1]: Kevin Drew.
[Query 2]: Where was Kevin Drew born?
[Answer 2]: Toronto.
[Query 3]: Where do greyhound buses in Toronto leave from?
[Answer 3]: Toronto Coach Terminal.
[Final Content]: The performer of Spirit If... is Kevin Drew [1]. Kevin Drew was born in Toronto [2]. \
Greyhound buses in Toronto leave from Toronto Coach Terminal [3]. So the final answer is Toronto Coach Terminal.
"""

TRACING_PROMPT = TRACING_INSTRUCTION + "\nFor example:\n" + TRACING_EXAMPLE + '\n[Question]: "{question}"\n{pairs}'
"""The full tracing prompt; ``pairs`` is rendered by :data:`TRACING_PAIR`, one line per node of *R*."""

TRACING_PAIR = "[Query {index}]: {query}\n[Answer {index}]: {answer}"
"""One ``[Query n]``/``[Answer n]`` pair of the tracing prompt."""


# =====================================================================================================
# Baselines (Section 4.1.2 of the paper): CoT, Direct, Direct Retrieval, Self-Ask, IRCoT.
#
# Written for this project, not quoted from the SearChain paper (which does not print its baselines'
# prompts). Each follows the format of its own paper: chain-of-thought "Q:/A:" with "Let's think step
# by step" and "So the answer is:" (Wei et al., 2022; Kojima et al., 2022); Self-Ask's "Are follow up
# questions needed here:", "Follow up:", "Intermediate answer:" and "So the final answer is:" (Press
# et al., 2023); IRCoT's "Wikipedia Title: <title>\n<text>" paragraphs before "Q:/A:" (Trivedi et al.,
# 2023). Every method shows two short demonstrations of the task family (BASELINE_DEMONSTRATIONS),
# rendered into its own format by :mod:`searchain_graph.evaluation.baselines`, so that small models see the format
# and large ones are not slowed by long prompts. Figure 8 (SearChain w/o IR) is COQ_PROMPT_NO_IR above.
# =====================================================================================================

from typing import NamedTuple  # noqa: E402


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
