"""Control flow of the Table 1 baselines, with rule-based fake LLMs.

What each test pins: the number of LLM calls, what is retrieved, the stop conditions, the vote.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import BaseMessage

from searchain_graph.baselines import (
    create_cot_sc_graph,
    create_dsp_graph,
    create_least_to_most_graph,
    create_react_graph,
    create_recite_graph,
    create_self_ask_no_ir_graph,
    create_verify_and_edit_graph,
)
from searchain_graph.baselines.decomposition import sub_questions
from searchain_graph.baselines.react import OBSERVATION_CHARS, parse_react_step
from searchain_graph.baselines.verify_edit import FACT_CHARS, rationale_sentences, select_facts
from searchain_graph.baselines.voting import majority
from searchain_graph.evaluation.methods import METHOD_DESCRIPTIONS, METHODS
from tests.fakes import QUESTION, RuleChatModel, retriever

OUTPUT_KEYS = {"question", "answer", "final_content", "rounds", "usage", "passages", "warnings"}


class SamplingModel(RuleChatModel):
    """A rule fake that also records each call's options (temperature, seed)."""

    options: list[dict[str, Any]] = []

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kw: Any):  # type: ignore[no-untyped-def,override]
        self.options.append(dict(kw))
        return super()._generate(messages, stop, run_manager)


def test_majority_votes_on_normalised_answers_and_ties_go_first() -> None:
    assert majority(["Toronto", "Montreal", "toronto.", "The Toronto"]) == (0, 3)
    assert majority(["Oslo", "Rome", "Rome", "Oslo"]) == (0, 2)
    assert majority(["", "  "]) == (None, 0)


def test_cot_sc_samples_n_chains_with_seeds_and_votes() -> None:
    replies = iter(
        [
            "Kevin Drew was born in Montreal. So the answer is: Montreal.",
            "Kevin Drew was born in Toronto. So the answer is: Toronto.",
            "He is from Toronto. So the answer is: toronto",
        ]
    )
    model = SamplingModel(respond=lambda m: next(replies), options=[])
    out = create_cot_sc_graph(model, samples=3, temperature=0.7).invoke({"question": QUESTION})
    assert set(out) == OUTPUT_KEYS
    assert out["answer"] == "Toronto" and "born in Toronto" in out["final_content"]
    assert out["usage"]["llm_calls"] == 3 and out["rounds"] == 1 and out["passages"] == []
    assert [o.get("temperature") for o in model.options] == [0.7] * 3
    assert "2 of 3 paths agree on the answer" in out["warnings"]
    assert len({m[0].text for m in model.calls}) == 1  # the same CoT prompt each time


def test_cot_sc_with_one_sample_is_greedy_cot() -> None:
    model = SamplingModel(respond=lambda m: "So the answer is: Toronto.", options=[])
    out = create_cot_sc_graph(model, samples=1).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto" and model.options == [{}] and out["warnings"] == []


def test_recite_then_answer_from_the_recitation() -> None:
    def respond(messages: Sequence[BaseMessage]) -> str:
        text = messages[-1].text
        if text.rstrip().endswith("Recitation:"):
            return " Kevin Drew was born in Toronto, Ontario."
        assert "Recitation: Kevin Drew was born in Toronto, Ontario." in text
        return "Toronto"

    model = RuleChatModel(respond=respond)
    out = create_recite_graph(model).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto" and out["usage"]["llm_calls"] == 2
    assert out["final_content"].startswith("Recitation: Kevin Drew was born in Toronto")
    voted = create_recite_graph(RuleChatModel(respond=respond), paths=3).invoke({"question": QUESTION})
    assert voted["usage"]["llm_calls"] == 6 and voted["answer"] == "Toronto"


def test_least_to_most_solves_sub_questions_in_order_with_earlier_answers() -> None:
    answers = {"Who is the performer": "Kevin Drew", "Where was Kevin Drew born": "Toronto"}

    def respond(messages: Sequence[BaseMessage]) -> str:
        text = messages[-1].text
        if text.rstrip().endswith("we need to know:"):
            return ' "Who is the performer of Spirit If...?", "Where was Kevin Drew born?".'
        last_q = text.rsplit("Q: ", 1)[1]
        for key, value in answers.items():
            if last_q.startswith(key):
                return value
        assert "A: Kevin Drew\n" in text and "A: Toronto\n" in text  # both solved before the question
        return "Toronto Coach Terminal"

    model = RuleChatModel(respond=respond)
    out = create_least_to_most_graph(model).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto Coach Terminal"
    assert out["usage"]["llm_calls"] == 4 and out["rounds"] == 2  # decompose, two sub-questions, the question
    assert out["final_content"].index("Kevin Drew") < out["final_content"].index("Toronto Coach Terminal")


def test_least_to_most_without_sub_questions_answers_directly() -> None:
    model = RuleChatModel(respond=lambda m: "nothing quoted here")
    out = create_least_to_most_graph(model).invoke({"question": QUESTION})
    assert out["usage"]["llm_calls"] == 2
    assert any("named no sub-question" in w for w in out["warnings"])
    assert sub_questions('"a b c", "a b c", "Q?"', "Q?", 4) == ["a b c"]


def test_self_ask_without_ir_is_one_call_that_answers_itself() -> None:
    reply = (
        " Yes.\nFollow up: Who is the performer of Spirit If...?\nIntermediate answer: Kevin Drew\n"
        "So the final answer is: Toronto"
    )
    model = RuleChatModel(respond=lambda m: reply)
    out = create_self_ask_no_ir_graph(model).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto" and out["usage"]["llm_calls"] == 1 and out["usage"]["retrieval_calls"] == 0
    assert "Intermediate answer: Kevin Drew" in out["final_content"]


def react_model(finish_after: int) -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        text = messages[-1].text
        if "Let's think step by step." in text:  # the CoT-SC backoff
            return "So the answer is: Toronto."
        n = text.rsplit("Thought ", 1)[1].split(":", 1)[0]
        if text.rsplit(f"Question: {QUESTION}", 1)[1].count("Observation ") >= finish_after:
            return f" I know it now.\nAction {n}: Finish[Toronto]"
        return f" I need the performer.\nAction {n}: Search[Spirit If performer]"

    return RuleChatModel(respond=respond)


def test_react_searches_observes_and_finishes() -> None:
    model = react_model(finish_after=2)
    out = create_react_graph(model, retriever()).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto" and out["rounds"] == 2
    assert out["usage"]["llm_calls"] == 3 and out["usage"]["retrieval_calls"] == 2
    assert out["passages"] and "Observation 1:" in out["final_content"]
    assert out["final_content"].rstrip().endswith("Action 3: Finish[Toronto]")
    observation = model.calls[1][0].text.rsplit("Observation 1: ", 1)[1].split("\n", 1)[0]
    assert 0 < len(observation) <= OBSERVATION_CHARS


def test_react_backs_off_to_cot_sc_after_max_steps() -> None:
    model = react_model(finish_after=99)
    out = create_react_graph(model, retriever(), max_steps=3, backoff_samples=2).invoke({"question": QUESTION})
    assert out["usage"]["llm_calls"] == 3 + 2 and out["usage"]["retrieval_calls"] == 3
    assert any("backed off to CoT-SC" in w for w in out["warnings"]) and out["answer"] == "Toronto"
    bare = create_react_graph(react_model(99), retriever(), max_steps=2, backoff_samples=0)
    out = bare.invoke({"question": QUESTION})
    assert out["answer"] == "" and out["usage"]["llm_calls"] == 2


def test_react_invalid_actions_count_as_steps() -> None:
    model = RuleChatModel(respond=lambda m: "I will just think.")
    out = create_react_graph(model, retriever(), max_steps=2, backoff_samples=0).invoke({"question": QUESTION})
    assert out["usage"]["llm_calls"] == 2 and out["usage"]["retrieval_calls"] == 0
    assert "Invalid action" in model.calls[1][0].text
    assert parse_react_step(" Think.\nAction 2: Search[Kevin Drew]") == ("Think.", "search", "Kevin Drew")
    assert parse_react_step("Thought 1: done\nAction 1: finish[Toronto") == ("done", "finish", "Toronto")
    assert parse_react_step("nothing") == ("nothing", None, "")


NEW_METHODS = ["cot_sc", "recite", "self_ask_no_ir", "least_to_most", "react", "verify_and_edit", "dsp"]


@pytest.mark.parametrize("name", NEW_METHODS)
@pytest.mark.parametrize("reply", ["", "[[[[ ]]]] Action: Search[", "\x00\x01", "Follow up: x\n" * 50])
def test_registered_and_malformed_output_never_crashes(name: str, reply: str) -> None:
    assert name in METHODS and name in METHOD_DESCRIPTIONS
    model = RuleChatModel(respond=lambda m: reply)
    out = METHODS[name](model, retriever(), None, "multihop").invoke({"question": QUESTION})  # type: ignore[arg-type]
    assert set(out) == OUTPUT_KEYS and isinstance(out["answer"], str)
    assert len(model.calls) <= 7 + 5  # ReAct's 7 steps and its 5-chain backoff at most


def test_bad_settings_are_refused() -> None:
    model = RuleChatModel(respond=lambda m: "x")
    with pytest.raises(ValueError, match="temperature > 0"):
        create_cot_sc_graph(model, samples=3, temperature=0)
    with pytest.raises(ValueError, match="paths must be"):
        create_recite_graph(model, paths=0)
    with pytest.raises(ValueError, match="max_sub_questions"):
        create_least_to_most_graph(model, max_sub_questions=0)
    with pytest.raises(ValueError, match="max_steps"):
        create_react_graph(model, retriever(), max_steps=0)


def ve_model(chains: list[str]) -> RuleChatModel:
    """Verify-and-Edit's fake: sampled chains in turn, then verifying questions and edited sentences."""
    sampled = iter(chains)

    def respond(messages: Sequence[BaseMessage]) -> str:
        text = messages[-1].text
        if text.rstrip().endswith("Let's think step by step."):
            return next(sampled)
        if text.rstrip().endswith("Question:"):  # a verifying question for the sentence
            sentence = text.rsplit("Sentence: ", 1)[1].split("\n", 1)[0]
            return "Where was Kevin Drew born?" if "born" in sentence else "Who performed Spirit If...?"
        if text.rstrip().endswith("Answer:"):  # the edited sentence, from the facts
            facts = text.rsplit("Facts: ", 1)[1].split("\n", 1)[0]
            return "Kevin Drew was born in Toronto." if "Toronto" in facts else "Kevin Drew performed Spirit If...."
        assert "Kevin Drew was born in Toronto." in text  # the edited rationale reaches the answer
        return " Toronto."

    return RuleChatModel(respond=respond)


def test_verify_and_edit_keeps_a_consistent_vote_without_retrieval() -> None:
    chain = "Spirit If... is by Kevin Drew. He was born in Toronto. So the answer is: Toronto."
    model = ve_model([chain] * 3)
    out = create_verify_and_edit_graph(model, retriever(), samples=3).invoke({"question": QUESTION})
    assert out["answer"] == "Toronto" and out["usage"]["llm_calls"] == 3
    assert out["usage"]["retrieval_calls"] == 0 and out["rounds"] == 1 and out["passages"] == []


def test_verify_and_edit_edits_a_split_vote_sentence_by_sentence() -> None:
    chains = [
        "Spirit If... is by Kevin Drew. Kevin Drew was born in Montreal. So the answer is: Montreal.",
        "So the answer is: Ottawa.",
        "So the answer is: Toronto.",
    ]
    model = ve_model(chains)
    out = create_verify_and_edit_graph(model, retriever(), samples=3).invoke({"question": QUESTION})
    # 3 chains; 2 sentences x (verifying question + edited sentence); the edited answer.
    assert out["usage"]["llm_calls"] == 3 + 2 * 2 + 1 and out["usage"]["retrieval_calls"] == 2
    assert out["rounds"] == 3 and out["answer"] == "Toronto"
    assert "Kevin Drew was born in Toronto." in out["final_content"] and "Montreal" not in out["final_content"]
    assert {p["metadata"]["id"] for p in out["passages"]} <= {"p1", "p2", "p3", "p4"} and out["passages"]
    assert any("consistency 1/3 below 2" in w for w in out["warnings"])
    queries = [m[0].text for m in model.calls if m[0].text.rstrip().endswith("Answer:")]
    assert all(len(q.rsplit("Facts: ", 1)[1].split("\n", 1)[0]) <= FACT_CHARS for q in queries)


def test_verify_and_edit_helpers() -> None:
    chain = "Paris is in France.\nFrance is in Europe. So the answer is: Europe."
    assert rationale_sentences(chain) == ["Paris is in France.", "France is in Europe."]
    passage = "Drew is a musician. He was born in Toronto. He likes tea."
    assert select_facts("Where was Drew born?", passage, 1) == "He was born in Toronto."
    assert select_facts("Where was Drew born?", passage, 2) == "Drew is a musician. He was born in Toronto."
    model = RuleChatModel(respond=lambda m: "x")
    with pytest.raises(ValueError, match="max_sentences"):
        create_verify_and_edit_graph(model, retriever(), max_sentences=0)


def dspy_model(answer_ok: bool = True) -> RuleChatModel:
    """Replies in DSPy's ChatAdapter format: a query for the query signature, else the answer."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        if "[[ ## query ## ]]" in messages[0].text:
            hop = sum("Kevin Drew" in m.text for m in messages)
            query = "Kevin Drew birthplace" if hop else "Spirit If performer"
            return f"[[ ## reasoning ## ]]\nI need a fact.\n\n[[ ## query ## ]]\n{query}\n\n[[ ## completed ## ]]"
        if not answer_ok:
            return "Toronto, I think"
        reasoning = "Kevin Drew was born in Toronto."
        return f"[[ ## reasoning ## ]]\n{reasoning}\n\n[[ ## answer ## ]]\nToronto\n\n[[ ## completed ## ]]"

    return RuleChatModel(respond=respond)


def test_dsp_runs_dspy_multihop_through_the_langchain_engine() -> None:
    pytest.importorskip("dspy")
    model = dspy_model()
    out = create_dsp_graph(model, retriever(), max_hops=2).invoke({"question": QUESTION})
    assert set(out) == OUTPUT_KEYS and out["answer"] == "Toronto" and out["warnings"] == []
    assert out["usage"]["llm_calls"] == 3 and out["usage"]["retrieval_calls"] == 2 and out["rounds"] == 2
    assert [p["metadata"]["id"] for p in out["passages"]] == ["p1", "p2"]
    assert out["final_content"] == "Kevin Drew was born in Toronto. So the answer is: Toronto"
    answer_prompt = model.calls[-1][-1].text  # DSPy's own prompt, with the context DSPy gathered
    assert "Kevin Drew (born 9 September 1976 in Toronto)" in answer_prompt and QUESTION in answer_prompt


async def test_dsp_async_and_a_reply_dspy_cannot_parse() -> None:
    pytest.importorskip("dspy")
    out = await create_dsp_graph(dspy_model(answer_ok=False), retriever()).ainvoke({"question": QUESTION})
    assert out["answer"] == "" and out["rounds"] == 2 and out["usage"]["retrieval_calls"] == 2
    assert out["usage"]["llm_calls"] == 2 + 2  # two queries; the answer tried by ChatAdapter, then JSONAdapter
    assert any("DSPy could not parse" in w for w in out["warnings"])
    with pytest.raises(ValueError, match="max_hops"):
        create_dsp_graph(dspy_model(), retriever(), max_hops=0)


def test_records_count_steps_and_keep_warnings_for_the_added_methods() -> None:
    from searchain_graph.evaluation.harness import make_record

    example = {"qid": "q1", "dataset": "hotpotqa", "question": QUESTION, "answers": ["Toronto"], "task": "multihop"}
    chain = "Spirit If... is by Kevin Drew. Kevin Drew was born in Toronto. So the answer is: Toronto."
    out = {"answer": "Toronto", "final_content": chain, "rounds": 1, "warnings": ["2 of 3 paths agree"]}
    record = make_record(example, "cot_sc", out, 1.0)  # type: ignore[arg-type]
    assert record["steps"] == 2 and record["warnings"] == ["2 of 3 paths agree"]
    follow_ups = "Follow up: Who?\nIntermediate answer: Drew\nFollow up: Where?\nIntermediate answer: Toronto"
    assert make_record(example, "self_ask_no_ir", {"final_content": follow_ups}, 1.0)["steps"] == 2  # type: ignore[arg-type]
    assert make_record(example, "recite", {**out, "rounds": 1}, 1.0)["steps"] == 0  # type: ignore[arg-type]
    assert make_record(example, "dsp", {**out, "rounds": 2}, 1.0)["steps"] == 2  # type: ignore[arg-type]
