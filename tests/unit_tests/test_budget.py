"""Replies cut by the token budget before an answer: the warning, the records, the report's section.

The fixture is a recorded reply of Qwen2.5-Coder-1.5B-Instruct (int4) to a StrategyQA question under
Chain-of-Thought (``docs/results/qwen/strategyqa.jsonl``): it enumerates "several factors" and the
256-token budget ends it in a formula, before any answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.messages import BaseMessage

from searchain_graph.baselines import create_cot_graph
from searchain_graph.baselines.driver import CUT_BEFORE_ANSWER
from searchain_graph.evaluation.budget import budget_of, cut_before_answer, cut_section
from searchain_graph.evaluation.report import render_report
from tests.fakes import RuleChatModel

QUESTION = "Will the Albany in Georgia reach a hundred thousand occupants before the one in New York?"

RECORDED_COT = "\n".join(
    [
        "To determine if the Albany in Georgia will reach a hundred thousand occupants before the one in New York, "
        "we need to consider several factors:",
        "",
        "1. **Population Growth**: The population of Albany is currently around 100,000, and it is growing at a rate "
        "of about 1.5% per year. The population of New York is currently around 8.4 million, and it is growing at a "
        "rate of about 0.2% per year.",
        "",
        "2. **Time Frame**: We need to calculate the time it will take for the population of Albany to reach 100,000 "
        "before the population of New York reaches 100,000.",
        "",
        "3. **Mathematical Calculation**: We can use the formula for exponential growth:",
        "   \\[",
        "   P(t) = P_0 \\cdot e^{rt}",
        "   \\]",
    ]
)


class Cut(RuleChatModel):
    """Replies like :class:`RuleChatModel`, every one reported as ended by the budget (``finish_reason="length"``)."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        result = super()._generate(messages, *args, **kwargs)
        result.generations[0].message.response_metadata["finish_reason"] = "length"
        return result


def replying(text: str, cls: type[RuleChatModel] = RuleChatModel) -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        return text

    return cls(respond=respond)


def record(method: str = "cot", *, right: bool = False, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "dataset": "strategyqa",
        "method": method,
        "qid": "q",
        "question": QUESTION,
        "answers": ["no"],
        "prediction": "To determine ...",
        "final_content": RECORDED_COT,
        "metrics": {"cover_em": float(right), "em": float(right), "f1": float(right)},
        "usage": {"llm_calls": 1, "output_tokens": 256},
        "warnings": [],
        "llm_backend": "onnx-int4",
    }
    return {**base, **fields}


def test_a_cot_reply_cut_before_its_answer_is_warned_and_still_answered() -> None:
    out = create_cot_graph(replying(RECORDED_COT, Cut), task="strategyqa").invoke({"question": QUESTION})
    assert any(CUT_BEFORE_ANSWER in w for w in out["warnings"])
    assert out["answer"]  # the first line, as before: the warning marks it, nothing is dropped


def test_a_reply_the_budget_ended_after_its_answer_is_not_warned() -> None:
    reply = RECORDED_COT.split("\n\n")[0] + " So the answer is: No. And a further note that ran"
    out = create_cot_graph(replying(reply, Cut), task="strategyqa").invoke({"question": QUESTION})
    assert out["answer"] == "No"
    assert not any(CUT_BEFORE_ANSWER in w for w in out["warnings"])


def test_a_reply_the_model_ended_itself_is_not_warned() -> None:
    out = create_cot_graph(replying(RECORDED_COT), task="strategyqa").invoke({"question": QUESTION})
    assert not any(CUT_BEFORE_ANSWER in w for w in out["warnings"])


def test_records_from_before_the_warning_are_judged_by_their_tokens_and_text() -> None:
    assert cut_before_answer(record())
    assert not cut_before_answer(record(usage={"llm_calls": 1, "output_tokens": 255}))  # ended by the model
    assert not cut_before_answer(record(usage={"llm_calls": 4, "output_tokens": 900}))  # several calls: unknown
    assert not cut_before_answer(record(final_content=RECORDED_COT + "\nSo the answer is: No."))
    chain = "[Query 1]: Is Albany in Georgia?\n[Answer 1]: Yes.\n[Final Content]: No [1]."
    assert not cut_before_answer(record("searchain_no_ir", final_content=chain))
    assert cut_before_answer(record("searchain_no_ir", final_content=chain.split("[Final")[0]))
    # The budget the record names wins; a server model's record with none cannot be judged.
    assert not cut_before_answer(record(max_new_tokens=512))
    assert budget_of(record(max_new_tokens=512)) == 512
    assert budget_of(record(llm_backend=None)) is None
    assert not cut_before_answer(record(llm_backend=None))
    for bad in (True, 0, -3, "256", 2.5):
        assert budget_of(record(max_new_tokens=bad)) is None
    # A warned record counts whatever its usage says.
    warned = [f"{CUT_BEFORE_ANSWER}; its first line was taken as the answer"]
    assert cut_before_answer(record(usage={}, warnings=warned))


def test_the_report_counts_cut_replies_per_method_and_what_remains() -> None:
    records = [
        record(qid="a"),
        record(qid="b"),
        record(qid="c", right=True, final_content="Yes. So the answer is: Yes.", usage={"llm_calls": 1}),
        record(qid="d", final_content="No.", usage={"llm_calls": 1, "output_tokens": 40}),
        {**record("searchain", qid="a", right=True), "usage": {"llm_calls": 3, "output_tokens": 600}},
    ]
    rows = cut_section(records, ["strategyqa"], ["searchain", "cot"])
    assert [r for r in rows if r.startswith("| strategyqa")] == ["| strategyqa | cot | 4 | 256 | 2 | 0 | 25.0 | 50.0 |"]
    assert cut_section(records[2:], ["strategyqa"], ["cot"]) == []  # no cut reply, no section
    report = render_report(records)
    assert "## Replies cut by the token budget before an answer" in report
