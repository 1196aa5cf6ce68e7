"""What the 1.5B's chains showed, each fixed and pinned here.

The replies are modelled on the Qwen2.5-Coder-1.5B runs the issue describes ("Kiss and Tell"):
a query asked again and again under new numbers until the token budget cut it, a last query cut
to "What was Cor", answers that say they are unknown, and a chain with no node at all.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage

from searchain_graph import ReaderOutput, create_searchain_graph
from searchain_graph.method.adaptations.chain_repair import says_unknown, settle_nodes
from searchain_graph.method.parsing import parse_chain
from tests.fakes import QUESTION as SPIRIT_IF
from tests.fakes import TREE_READS, RuleChatModel, ScriptedReader, is_tracing, retriever, tracing_reply

QUESTION = "What government position was held by the woman who portrayed Corliss Archer in the film Kiss and Tell?"

LOOP = """[Query 1]: Who portrayed Corliss Archer in the film Kiss and Tell?
[Answer 1]: Shirley Temple.
[Query 2]: What is the name of the actress who played Corliss Archer?
[Answer 2]: Shirley Temple.
[Query 3]: What government position did Shirley Temple hold?
[Answer 3]: Ambassador.
[Query 4]: What is the name of the actress who played Corliss Archer?
[Answer 4]: Shirley Temple.
[Query 5]: What is the name of the actress who played Corliss Archer?
[Answer 5]: Shirley"""

CUT = """[Query 1]: Who portrayed Corliss Archer in the film Kiss and Tell?
[Answer 1]: Shirley Temple.
[Query 2]: What was Cor"""


class Cut(RuleChatModel):
    """Replies like :class:`RuleChatModel`, reporting ``finish_reason="length"`` for chains."""

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Any:
        result = super()._generate(messages, *args, **kwargs)
        if not is_tracing(messages):
            result.generations[0].message.response_metadata["finish_reason"] = "length"
        return result


def replying(chain: str, cls: type[RuleChatModel] = RuleChatModel) -> RuleChatModel:
    def respond(messages: Sequence[BaseMessage]) -> str:
        return tracing_reply(messages) or chain

    return cls(respond=respond)


READS = {**TREE_READS, "Kiss and Tell": ReaderOutput("Shirley Temple", 3.0)}


def run(model: RuleChatModel, question: str = QUESTION) -> dict[str, Any]:
    graph = create_searchain_graph(model, retriever(), ScriptedReader(READS), max_rounds=1)
    out: dict[str, Any] = graph.invoke({"question": question})
    return out


def test_a_query_asked_again_under_a_new_number_ends_the_chain_as_a_loop() -> None:
    parsed = parse_chain(LOOP)
    assert [n["index"] for n in parsed.nodes] == [1, 2, 3]
    assert any("again (node 4, first asked as node 2): a loop; the chain ends at node 3" in w for w in parsed.warnings)
    out = run(replying(LOOP))
    assert [c["node"] for c in out["tree"][0]["checks"]] == [1, 2, 3]


def test_the_last_node_of_a_reply_cut_by_the_token_budget_is_never_checked() -> None:
    out = run(replying(CUT, Cut))
    assert [n["query"] for n in out["tree"][0]["nodes"]] == ["Who portrayed Corliss Archer in the film Kiss and Tell?"]
    assert not any(c["query"] == "What was Cor" for b in out["tree"] for c in b["checks"])
    assert any("cut by the token budget; its last node 'What was Cor' was dropped" in w for w in out["warnings"])
    # A whole reply (the model ended it) keeps its last node.
    whole = run(replying(CUT))
    assert [n["query"] for n in whole["tree"][0]["nodes"]][-1] == "What was Cor"


def test_a_reply_cut_at_the_reply_limit_is_truncated_too() -> None:
    model = RuleChatModel(respond=lambda messages: tracing_reply(messages) or CUT + " x" * 10_000)
    out = run(model)
    assert any("its last node" in w and "was dropped" in w for w in out["warnings"])


@pytest.mark.parametrize(
    ("answer", "unknown"),
    [
        ("Unknown.", True),
        ("I don't know", True),
        ("Not provided", True),
        ("The actress is unknown.", True),
        ("Sorry, I don't know.", True),
        ("I'm not sure", True),
        ("The birthplace is not provided.", False),  # "birthplace" is a word of the answer
        ("Toronto.", False),
        ("Yes.", False),
        ("No", False),
        # The numeral "I" is a word of the answer, not the "I" of "I don't know" (the HotpotQA run's
        # "Which NCAA Division was the Big 12 Conference in?" -> "Division I." was taken as unknown).
        ("Division I.", False),
        ("World War I", False),
        # An answer in the query's own words is an answer: the query often names its answer among
        # others ("Who performed ... by Dillon Francis and DJ Snake?" -> "DJ Snake").
        ("DJ Snake.", False),
        # A word that names no one is an answer on its own (the choose set's "Actor" for a profession).
        ("Actor.", False),
        ("actress", False),
        ("Corliss Archer is Corliss Archer.", False),
    ],
)
def test_an_answer_that_says_it_is_unknown_answers_nothing(answer: str, unknown: bool) -> None:
    assert says_unknown(answer) is unknown


def test_an_unknown_node_is_completed_by_ir_and_a_node_the_query_names_is_checked() -> None:
    unknown = (
        "[Query 1]: Where was Kevin Drew born?\n[Answer 1]: Unknown.\n[Final Content]: Kevin Drew was born there [1]."
    )
    out = run(replying(unknown))
    (check,) = out["tree"][0]["checks"]
    assert check["action"] == "completion" and out["references"][0]["answer"] == "Toronto"
    assert any("says it is unknown; treated as unsolved" in w for w in out["warnings"])
    # "Kevin Drew" answers a query that names him among others: a node IR verifies, not an unsolved one.
    named = (
        "[Query 1]: Who performed Spirit If..., Kevin Drew or Broken Social Scene?\n[Answer 1]: Kevin Drew.\n"
        "[Final Content]: Kevin Drew [1]."
    )
    out = run(replying(named))
    assert out["tree"][0]["nodes"][0]["unsolved"] is False
    assert not any("treated as unsolved" in w for w in out["warnings"])


@pytest.mark.parametrize("reply", ["", "[Unsolved Query]", "[Unsolved Query]: ", "I cannot answer that."])
def test_a_chain_with_no_node_has_the_question_completed_by_ir(reply: str) -> None:
    out = run(replying(reply), SPIRIT_IF)  # a question the test corpus has passages for
    assert out["tree"][0]["nodes"] == [{"index": 1, "query": SPIRIT_IF, "answer": None, "unsolved": True}]
    (check,) = out["tree"][0]["checks"]
    assert check["action"] == "completion"
    assert any("the question itself is completed by IR" in w for w in out["warnings"])
    assert out["answer"] == check["reader_answer"] == "Kevin Drew"  # IR's g for the question, never a marker


def test_settle_nodes_leaves_a_sound_chain_as_it_is() -> None:
    parsed = parse_chain(CUT.replace("[Query 2]: What was Cor", "[Final Content]: Shirley Temple [1]."))
    settled = settle_nodes(parsed.nodes, QUESTION, truncated=False)
    assert settled.nodes == parsed.nodes and settled.warnings == []
    assert isinstance(AIMessage("x").response_metadata, dict)
