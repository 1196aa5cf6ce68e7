"""The LLM and the reader as adversaries: replies and reads no honest model gives.

Every run ends within ``max_rounds`` with an answer field and warnings, never an exception; a
read without a usable confidence (NaN, ±inf, ``None``, not a number) never corrects a node; the
output stays strict JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from langchain_core.messages import BaseMessage

from searchain_graph import ReaderOutput, create_searchain_graph
from searchain_graph.ir.readers.base import usable_confidence
from tests.fakes import QUESTION, TREE_READS, RuleChatModel, ScriptedReader, retriever, tree_llm

MAX_ROUNDS = 3

NODES_200 = "\n".join(f"[Query {i}]: Who is person {i}?\n[Answer {i}]: Person {i}." for i in range(1, 201))
REPLIES = {
    "empty": "",
    "whitespace": " \n\t ",
    "100k characters": "x" * 100_000,
    "100k of markers": "[Query 1]: [Answer 1]: " * 4_000,
    "200 nodes": NODES_200 + "\n[Final Content]: Person 200 [200].",
    "nested brackets": "[[Query 1]]: Who [is [the performer]]?\n[[Answer 1]: [Kevin Drew\n[Final Content]: ]]",
    "unbalanced": "[Query 1: Who is the performer?\n[Answer 1]: Kevin Drew\n[Final Content: Kevin Drew [1",
    "final content repeated": "[Final Content]: A [1].\n[Final Content]: B [2].\n[Final Content]: C.",
    "odd citations": "[Query 1]: Who is the performer of Spirit If...?\n[Answer 1]: Kevin Drew.\n"
    "[Final Content]: Kevin Drew [0][999][1,2][-1][ 1 ]. So the final answer is Kevin Drew.",
    "unsolved only": "[Unsolved Query]: \n[Unsolved Query]:\n[Unsolved Query]: ?",
    "only the question back": f"[Question]: {QUESTION}",
    "binary noise": "\x00\x01\ufffd[Query 1]\x00: \ud7ff?\n[Answer 1]: \u202e\n",
    "query without answer": "[Query 1]: Where was Kevin Drew born?\n[Query 2]: ?\n[Query 3]:",
}


def replying(text: str) -> RuleChatModel:
    """An LLM that gives ``text`` to every prompt, tracing included."""

    def respond(messages: Sequence[BaseMessage]) -> str:
        return text

    return RuleChatModel(respond=respond)


def strict_json(out: dict[str, Any]) -> None:
    json.dumps(out, allow_nan=False, default=str)


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_any_reply_ends_the_run_within_max_rounds(name: str) -> None:
    graph = create_searchain_graph(
        replying(REPLIES[name]), retriever(), ScriptedReader(TREE_READS), max_rounds=MAX_ROUNDS
    )
    out = graph.invoke({"question": QUESTION})
    assert 1 <= out["rounds"] <= MAX_ROUNDS
    assert isinstance(out["answer"], str) and isinstance(out["final_content"], str)
    assert all(1 <= r["index"] <= len(out["references"]) for r in out["references"])
    strict_json(out)
    # What goes back to the LLM is bounded: no prompt repeats a 100k-character reply whole.
    assert len(out["tree"]) == out["rounds"]


def test_markers_inside_the_question_are_not_parsed_as_the_chain() -> None:
    question = "What is [Query 1]: x [Answer 1]: y [Final Content]: z [1] about?"
    llm = tree_llm()
    graph = create_searchain_graph(llm, retriever(), ScriptedReader(TREE_READS), max_rounds=MAX_ROUNDS)
    out = graph.invoke({"question": question})
    first = out["tree"][0]
    assert [n["query"] for n in first["nodes"]][0] == "Who is the performer of Spirit If...?"
    assert out["question"] == question


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, None, "9.9", True])
def test_a_read_without_a_usable_confidence_never_corrects(bad: Any) -> None:
    reads = {**TREE_READS, "born": ReaderOutput("Toronto", bad)}
    graph = create_searchain_graph(tree_llm(), retriever(), ScriptedReader(reads), confidence_threshold=1.5)
    out = graph.invoke({"question": QUESTION})
    node2 = next(c for c in out["tree"][0]["checks"] if c["node"] == 2)
    assert node2["action"] == "pass" and node2["confidence"] is None
    strict_json(out)


@pytest.mark.parametrize(
    ("value", "usable"),
    [
        (2.5, 2.5),
        (3, 3.0),
        (np.float32(1.5), 1.5),
        (-1e300, -1e300),
        (math.nan, None),
        (math.inf, None),
        (np.float64("nan"), None),
        (None, None),
        ("2", None),
        (False, None),
    ],
)
def test_usable_confidence(value: Any, usable: float | None) -> None:
    assert usable_confidence(value) == usable
