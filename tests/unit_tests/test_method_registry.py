"""The method registry: one record per method, read by ``--help``, the harness and the report."""

from __future__ import annotations

import importlib.metadata
import inspect
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable, RunnableLambda

from searchain_graph.baselines import reasoning_steps
from searchain_graph.cli import main
from searchain_graph.evaluation.datasets import Example
from searchain_graph.evaluation.harness import make_record, run_evaluation
from searchain_graph.evaluation.method_spec import count_nothing, count_rounds, load_builder
from searchain_graph.evaluation.methods import METHOD_DESCRIPTIONS, METHODS, MethodSpec, parse_methods
from searchain_graph.evaluation.report import render_report
from searchain_graph.method.parsing import parse_chain
from tests.fakes import CHAIN_FIXED, QUESTION, RuleChatModel, ScriptedReader, retriever

NAMES = [
    "searchain",
    "searchain_no_ir",
    "searchain_no_verification",
    "searchain_no_completion",
    "ircot",
    "self_ask",
    "direct_retrieval",
    "direct",
    "cot",
    "cot_sc",
    "recite",
    "self_ask_no_ir",
    "least_to_most",
    "react",
    "react_agent",
    "verify_and_edit",
    "dsp",
]


def example() -> Example:
    return {
        "qid": "q1",
        "dataset": "musique",
        "question": QUESTION,
        "answers": ["Toronto"],
        "task": "multihop",
        "hops": 2,
        "paragraphs": [],
        "decomposition": None,
        "meta": {},
    }


def legacy_steps(method: str, out: dict[str, Any]) -> int:
    """The harness's step count before the registry (by method name), to check the records against."""
    if method.startswith("searchain") and method != "searchain_no_ir":
        return len(out.get("references") or [])
    if method == "searchain_no_ir":
        return len(parse_chain(out.get("final_content") or "").nodes)
    content = str(out.get("final_content") or "")
    if method in ("cot", "cot_sc", "verify_and_edit"):
        return reasoning_steps(content)
    if method == "self_ask_no_ir":
        return content.lower().count("follow up:")
    if method in ("direct", "direct_retrieval", "recite"):
        return 0
    return int(out.get("rounds") or 0)


OUTPUTS = [
    {},
    {"references": [{"source": "llm"}] * 3, "final_content": CHAIN_FIXED, "rounds": 2},
    {"final_content": "Drew made it. He was born in Toronto. So the answer is: Toronto.", "rounds": 4},
    {"final_content": "Follow up: Who?\nIntermediate answer: Drew\nFollow up: Where?\nIntermediate answer: X"},
]


def test_the_registry_keeps_the_names_and_their_order() -> None:
    assert list(METHODS) == NAMES
    assert parse_methods("all") == NAMES
    for name, spec in METHODS.items():
        assert isinstance(spec, MethodSpec) and spec.name == name
        assert spec.description.strip() and "\n" not in spec.description
        assert isinstance(spec.builder, str) and callable(spec.steps)
    assert dict(METHOD_DESCRIPTIONS) == {name: spec.description for name, spec in METHODS.items()}


@pytest.mark.parametrize("out", OUTPUTS)
def test_each_record_counts_steps_as_the_harness_did(out: dict[str, Any]) -> None:
    for name in METHODS:
        assert make_record(example(), name, out, 1.0)["steps"] == legacy_steps(name, out), name
    assert make_record(example(), "unregistered", {"rounds": 3}, 1.0)["steps"] == 3  # the graph's rounds


def test_each_record_names_a_builder_that_takes_what_the_record_passes() -> None:
    """The paths resolve, and each builder binds ``llm``, the retriever and reader it uses, ``task``,
    the record's fixed keywords and every option ``searchain eval`` may give it."""
    for name, spec in METHODS.items():
        assert isinstance(spec.builder, str)
        module, _, function = spec.builder.partition(":")
        assert module in ("searchain_graph.baselines", "searchain_graph.method.graph"), name
        builder = load_builder(spec.builder)
        assert callable(builder) and builder.__name__ == function, name
        uses = ["retriever"] * spec.retrieves + ["reader"] * spec.reads
        options = dict.fromkeys(spec.options) | ({"cache": None} if spec.caches else {})
        inspect.signature(builder).bind("llm", *uses, task="multihop", **spec.builder_kwargs, **options)
    assert METHODS["searchain_no_verification"].builder_kwargs == {"verification": False}
    assert METHODS["searchain_no_completion"].builder_kwargs == {"completion": False}
    assert METHODS["searchain"].builder_kwargs == {}


def test_a_record_calls_its_builder_with_what_the_method_uses(monkeypatch: pytest.MonkeyPatch) -> None:
    """The contract of the old factories: positional ``llm`` [, retriever] [, reader], then
    ``task``, the record's fixed keywords (an ablation) and the options (and ``cache``)."""
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    def fake(*args: Any, **kwargs: Any) -> str:
        calls.append((args, kwargs))
        return "graph"

    import searchain_graph.baselines as baselines
    import searchain_graph.method.graph as graph

    monkeypatch.setattr(graph, "create_searchain_graph", fake)
    given: tuple[Any, Any, Any] = ("L", "R", "D")  # what the harness passes: llm, retriever, reader
    for name in ("ircot", "self_ask", "cot", "searchain_no_ir"):
        monkeypatch.setattr(baselines, str(METHODS[name].builder).partition(":")[2], fake)
    assert METHODS["searchain_no_verification"](*given, "yesno", cache="C", demonstrations="turns") == "graph"
    assert calls.pop() == (
        ("L", "R", "D"),
        {"task": "yesno", "verification": False, "demonstrations": "turns", "cache": "C"},
    )
    METHODS["searchain"](*given, "multihop")
    assert calls.pop() == (("L", "R", "D"), {"task": "multihop"})
    METHODS["searchain_no_ir"](*given, "fact", cache="C", demonstrations="turns")
    assert calls.pop() == (("L",), {"task": "fact", "demonstrations": "turns"})  # no cache: it does not cache
    METHODS["ircot"](*given, "multihop")
    assert calls.pop() == (("L", "R"), {"task": "multihop"})
    METHODS["self_ask"](*given, "multihop")
    assert calls.pop() == (("L", "R", "D"), {"task": "multihop"})
    METHODS["cot"](*given, "multihop")
    assert calls.pop() == (("L",), {"task": "multihop"})
    with pytest.raises(TypeError, match="takes no option"):
        METHODS["cot"](*given, "multihop", demonstrations="turns")


def test_what_each_method_uses_and_needs() -> None:
    closed_book = {"searchain_no_ir", "direct", "cot", "cot_sc", "recite", "self_ask_no_ir", "least_to_most"}
    assert {name for name, spec in METHODS.items() if not spec.retrieves} == closed_book
    readers = {"searchain", "searchain_no_verification", "searchain_no_completion", "self_ask"}
    assert {name for name, spec in METHODS.items() if spec.reads} == readers
    assert {name for name, spec in METHODS.items() if spec.needs_tools} == {"react_agent"}
    assert {name: spec.extras for name, spec in METHODS.items() if spec.extras} == {"dsp": ("eval",)}
    declared = set(importlib.metadata.metadata("searchain-graph").get_all("Provides-Extra") or [])
    for spec in METHODS.values():
        assert set(spec.extras) <= declared, spec.name


class ToolRuleModel(RuleChatModel):
    """A rule fake that takes tools (and never calls them)."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, Any]:
        return self.bind(**kwargs)


@pytest.mark.parametrize("name", NAMES)
def test_each_method_runs_without_what_it_does_not_use(name: str) -> None:
    spec = METHODS[name]
    if "eval" in spec.extras:
        pytest.importorskip("dspy")

    def respond(messages: Sequence[BaseMessage]) -> str:
        return "Kevin Drew was born in Toronto. So the answer is: Toronto."

    model = (ToolRuleModel if spec.needs_tools else RuleChatModel)(respond=respond)
    ret = retriever() if spec.retrieves else None
    reader = ScriptedReader({}) if spec.reads else None
    out = spec(model, ret, reader, "multihop").invoke({"question": QUESTION})  # type: ignore[arg-type]
    assert isinstance(out["answer"], str) and out["usage"]["llm_calls"] >= 1
    if not spec.retrieves:
        assert out["usage"]["retrieval_calls"] == 0
    if not spec.reads:
        assert out["usage"]["reader_calls"] == 0
    assert isinstance(spec.steps(out), int)


def test_a_method_that_needs_tools_refuses_a_model_without_them() -> None:
    with pytest.raises(TypeError, match="bind_tools"):
        METHODS["react_agent"](RuleChatModel(respond=lambda m: "x"), retriever(), None, "multihop")  # type: ignore[arg-type]


def test_a_record_is_checked_when_made() -> None:
    def build(*args: Any, **kwargs: Any) -> Any:
        return None

    for bad in ("", "a,b", "all", " cot"):
        with pytest.raises(ValueError, match="method name"):
            MethodSpec(bad, "a description", builder=build, steps=count_nothing)
    with pytest.raises(ValueError, match="description"):
        MethodSpec("echo", "  ", builder=build, steps=count_nothing)
    with pytest.raises(TypeError, match="callables"):
        MethodSpec("echo", "echo", builder=build, steps=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callables"):
        MethodSpec("echo", "echo", builder=3, steps=count_nothing)  # type: ignore[arg-type]
    for path in ("searchain_graph.baselines.create_cot_graph", "searchain_graph.baselines:", ":create_cot_graph"):
        with pytest.raises(ValueError, match="package.module:function"):
            MethodSpec("echo", "echo", builder=path, steps=count_nothing)
    with pytest.raises(ValueError, match="retrieves too"):
        MethodSpec("echo", "echo", builder=build, steps=count_nothing, reads=True)


def echo_spec(built: list[str]) -> MethodSpec:
    """A method added by a test: it answers with the question's first word, in 7 steps."""

    def build(llm: Any, *, task: str) -> Any:  # closed-book: it takes neither retriever nor reader
        built.append(task)
        return RunnableLambda(
            lambda state: {
                "question": state["question"],
                "answer": state["question"].split()[0],
                "final_content": "echo",
                "rounds": 1,
                "usage": {"llm_calls": 0},
                "warnings": [],
            }
        )

    return MethodSpec(
        "echo_first_word",
        "Echo (a test method): answers with the question's first word",
        builder=build,
        steps=lambda out: 7,
        paper_accuracy={"musique": 12.5},
        paper_cost=(1, 2, 3.0, 4.0),
    )


def test_a_new_record_shows_up_in_help_harness_and_report(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    built: list[str] = []
    monkeypatch.setitem(METHODS, "echo_first_word", echo_spec(built))
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  echo_first_word ")]
    assert len(rows) == 1 and "Echo (a test method)" in rows[0]
    assert METHOD_DESCRIPTIONS["echo_first_word"].startswith("Echo")
    assert parse_methods("all")[-1] == "echo_first_word"
    summary = run_evaluation(
        [example()],
        ["echo_first_word", "direct"],
        llm=RuleChatModel(respond=lambda m: "So the answer is: Toronto."),
        retriever=retriever(),
        reader=ScriptedReader({}),
        out_path=tmp_path / "results.jsonl",
    )
    echo = next(r for r in summary.records if r["method"] == "echo_first_word")
    assert echo["prediction"] == "Where" and echo["steps"] == 7 and echo["error"] is None and built == ["multihop"]
    report = render_report(summary.records)
    assert "| echo_first_word | 0.0 (0.0 / 0.0) *12.5* |" in report  # Table 1, with the record's paper figure
    assert "| echo_first_word | 7.00 |" in report  # Table 4
    assert "| echo_first_word | 0 *1* | 0 *2* |" in report  # Table 5


def test_the_report_prints_the_paper_figures_from_the_records() -> None:
    records = [{**make_record(example(), name, {"rounds": 1}, 1.0), "dataset": "musique"} for name in ("cot", "dsp")]
    report = render_report(records)
    assert "*9.46*" in report and "*15.83*" in report  # Table 1, MuSiQue
    assert "*2.25*" in report  # Table 4, CoT on 2-hop questions
    assert "*1759*" in report and "*10.47*" in report  # Table 5, DSP
    assert METHODS["ircot"].paper_accuracy == {} and count_rounds({"rounds": 2}) == 2


def test_importing_the_registry_stays_cheap() -> None:
    code = (
        "import sys, searchain_graph.evaluation.methods; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'torch', 'transformers', 'langgraph', 'langchain', 'langchain_core', 'dspy'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
