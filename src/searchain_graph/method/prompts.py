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
_NO_IR_INSTRUCTION = """Construct a global reasoning chain for this complex question [Question]:"{question}" \
and answer the question, and generate a query to the search engine based on what you already know at \
each step of the reasoning chain, starting with [Query].
You should generate the answer for each [Query], starting with [Answer].
You should generate the final answer for the [Question] by referring the [Query]-[Answer] pairs, \
starting with [Final Content].
For example:
"""

_NO_IR_EXAMPLES = """[Question]: "How many places of higher learning are in the city where the Yongle emperor greeted the person to whom the edict was addressed?"
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

COQ_PROMPT_NO_IR = _NO_IR_INSTRUCTION + _NO_IR_EXAMPLES + _QUESTION_CUE
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

# --- An addition (``Context.tracing``): the tracing prompt with each step's passage.
TRACING_PASSAGES_INSTRUCTION = (
    "You can try to generate the final answer for the [Question] by referring to the "
    "[Query]-[Answer] pairs and the [Reference] found for each [Query], starting with [Final Content]. "
    "Where a [Reference] answers its [Query] differently from the [Answer], follow the [Reference]. "
    "Cite the [Reference] of each step as [n]."
)
"""The tracing instruction when the passages are shown: the paper's, and what to do with a passage."""

TRACING_PASSAGES_EXAMPLE = """[Question]: "Where do greyhound buses that are in the birthplace of Spirit If...'s performer leave from?"
[Query 1]: Who is the performer of Spirit If... ?
[Reference 1]: Spirit If...: Spirit If... is a 2007 album by Kevin Drew, a founder of the Canadian band Broken Social Scene.
[Answer 1]: Kevin Drew.
[Query 2]: Where was Kevin Drew born?
[Reference 2]: Kevin Drew: Kevin Drew (born September 9, 1976) is a Canadian musician born in Toronto, Ontario.
[Answer 2]: Montreal.
[Query 3]: Where do greyhound buses in Toronto leave from?
[Reference 3]: Toronto Coach Terminal: The Toronto Coach Terminal was the main intercity bus station of Toronto, \
served by Greyhound Canada.
[Answer 3]: Toronto Coach Terminal.
[Final Content]: The performer of Spirit If... is Kevin Drew [1]. Kevin Drew was born in Toronto [2]. \
Greyhound buses in Toronto leave from Toronto Coach Terminal [3]. So the final answer is Toronto Coach Terminal.
"""
"""The tracing example with passages: the same chain, one answer (Answer 2) put right by its passage."""

TRACING_CONFIRMED_INSTRUCTION = (
    "You can try to generate the final answer for the [Question] by referring to the [Reference] found for "
    "each [Query] and the [Answer]s they confirm, starting with [Final Content]. A [Query] without an [Answer] "
    "is answered by its [Reference]. Cite the [Reference] of each step as [n]."
)
"""The tracing instruction when only the answers IR confirmed are shown."""

TRACING_CONFIRMED_EXAMPLE = TRACING_PASSAGES_EXAMPLE.replace("[Answer 2]: Montreal.\n", "")
"""The tracing example with passages, Answer 2 left out (its passage did not confirm it)."""

_READER_EXAMPLE_PARAGRAPHS = """Wikipedia Title: Spirit If...
Spirit If... is a 2007 album by Kevin Drew, a founder of the Canadian band Broken Social Scene.

Wikipedia Title: Kevin Drew
Kevin Drew (born September 9, 1976) is a Canadian musician born in Toronto, Ontario.

Wikipedia Title: Toronto Coach Terminal
The Toronto Coach Terminal was the main intercity bus station of Toronto, served by Greyhound Canada."""

_READER_EXAMPLE_QA = """Q: Where do greyhound buses that are in the birthplace of Spirit If...'s performer leave from?
A: Toronto Coach Terminal"""

TRACING_READER_PROMPT = f"""Answer the question using the paragraphs. Reply with the answer only.

{_READER_EXAMPLE_PARAGRAPHS}

{_READER_EXAMPLE_QA}

{{paragraphs}}

Q: {{question}}
A:"""
"""``tracing="reader"``: the answer read from the path's passages, IRCoT's final reader layout, one worked example."""

TRACING_READER_CONFIRMED_PROMPT = f"""Answer the question using the paragraphs and the checked answers. Reply with the answer only.

{_READER_EXAMPLE_PARAGRAPHS}

Checked answers:
Who is the performer of Spirit If... ? Kevin Drew.
Where do greyhound buses in Toronto leave from? Toronto Coach Terminal.

{_READER_EXAMPLE_QA}

{{paragraphs}}

Checked answers:
{{checked}}

Q: {{question}}
A:"""
"""``tracing="reader_confirmed"``: the reader's prompt with the answers IR stands behind, one per line."""

TRACING_PASSAGE_PAIR = "[Query {index}]: {query}\n[Reference {index}]: {passage}\n[Answer {index}]: {answer}"
"""One step of the tracing prompt with its passage."""

TRACING_PASSAGE_ONLY = "[Query {index}]: {query}\n[Reference {index}]: {passage}"
"""One step of the tracing prompt with its passage and no answer."""


# --- The parts of each prompt, for the layouts of :mod:`searchain_graph.method.adaptations.turns`.
COQ_PARTS: dict[str, tuple[str, str]] = {
    "multihop": (_COQ_INSTRUCTION, _MULTIHOP_EXAMPLES),
    "slot_filling": (_COQ_INSTRUCTION, _MULTIHOP_EXAMPLES),
    "yesno": (_COQ_INSTRUCTION, _YESNO_EXAMPLES),
    "fact": (_FACT_INSTRUCTION, _FACT_EXAMPLES),
    "longform": (_COQ_INSTRUCTION, _LONGFORM_EXAMPLES),
}

"""The instruction and the demonstrations of each CoQ prompt (with IR), by task family."""

NO_IR_PARTS: tuple[str, str] = (_NO_IR_INSTRUCTION, _NO_IR_EXAMPLES)
"""The instruction and the demonstrations of Figure 8 (without IR)."""

QUESTION_CUE = _QUESTION_CUE
"""The authors' code ends every CoQ prompt by restating the question (``question=``)."""


# --- The names the demonstrations answer with, to tell a copied answer.
COQ_DEMONSTRATION_NAMES: tuple[str, ...] = (
    "Spirit If",
    "Kevin Drew",
    "Toronto",
    "Greyhound",
    "Toronto Coach Terminal",
    "Arthur's Magazine",
    "First for Women",
)
"""The entities of Figure 11's demonstrations (and the tracing example's): a chain for a question
that names none of them, yet answers with one, copied it. The years (1844, 1989) are left out:
a year is a common answer of its own."""

NO_IR_DEMONSTRATION_NAMES: tuple[str, ...] = (
    "Yongle",
    "Karmapa",
    "Nanjing",
    "Arthur's Magazine",
    "First for Women",
)
"""The entities of Figure 8's demonstrations (SearChain w/o IR), years and counts left out."""

DEMONSTRATION_NAMES: dict[str, tuple[str, ...]] = {
    "multihop": COQ_DEMONSTRATION_NAMES,
    "slot_filling": COQ_DEMONSTRATION_NAMES,
}
"""The demonstration entities of each task's CoQ prompt, where they are names an answer could copy
(the yes/no, fact and long-form demonstrations answer with words any answer may use)."""

TRACING_DEMONSTRATION_NAMES: tuple[str, ...] = COQ_DEMONSTRATION_NAMES
"""The entities of the tracing prompt's worked example (Figure 1/3's chain), for every task."""
