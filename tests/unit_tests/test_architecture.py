"""The package's shape: layers that only import downwards, no import cycles, no private names shared.

The layers, lowest first (``docs/architecture.md`` argues the cut):

* ``llms``: local models and how they are found;
* ``ir``: corpora, indexes, retrievers, readers;
* ``method`` and ``baselines``, side by side on one layer: the methods. ``method`` is SearChain
  itself (state, prompts, parsing, verdict, nodes, graph) and the step protocol every method's
  nodes are written in; ``baselines`` are the other methods (IRCoT, Self-Ask, CoT, ...), built on
  it. SearChain does not import the baselines;
* ``viz``: drawing a run's Tree-of-Reasoning (HTML, Markdown);
* ``serve``: the local web app that draws each run as it goes (Starlette, uvicorn);
* ``evaluation``: datasets, metrics, the method registry, the harness, the report;
* ``cli``: the ``searchain`` command.

A module may import its own layer and the layers below it (a file is cut along a seam, not at a
line count). Nothing imports the top-level ``searchain_graph`` package (the public facade) except
``__main__``. Imports inside functions count too: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import searchain_graph

LAYERS = (("llms",), ("ir",), ("method", "baselines"), ("viz",), ("serve",), ("evaluation",), ("cli",))
"""The layers, lowest first, each the top-level packages on it."""
PACKAGES = tuple(name for packages in LAYERS for name in packages)
PUBLIC_API = {
    "BM25Retriever",
    "ColBERTRetriever",
    "CorpusFormatError",
    "BundledReader",
    "DPRReader",
    "ExtractiveQAReader",
    "IndexSummary",
    "InputState",
    "InvalidQuestionError",
    "LLMReader",
    "ModelNotFoundError",
    "OutputState",
    "PassageStore",
    "ParsedChain",
    "QueryMatcher",
    "Reader",
    "ReaderOutput",
    "Reference",
    "Context",
    "SearChainState",
    "TransformersChatModel",
    "build_index",
    "create_searchain_graph",
    "extract_final_answer",
    "iter_corpus",
    "load_chat_model",
    "load_corpus",
    "load_index",
    "normalize_answer",
    "normalized_duplicate",
    "parse_chain",
}
"""The top-level names before the package was split into layers: they must keep importing."""


def modules(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package under ``root``, by dotted name (a package is its ``__init__``)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join([package, *parts])] = path
    return found


def _from_base(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute name of the module ``from ... import`` reads from (relative imports resolved)."""
    base = node.module or ""
    if node.level:
        anchor = module.split(".")
        anchor = anchor if is_package else anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    return base


def _imported_names(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, module, is_package)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(root: Path, package: str) -> dict[str, set[str]]:
    """``module -> modules of the package it imports`` (at module level or inside functions)."""
    found = modules(root, package)
    graph: dict[str, set[str]] = {}
    for name, path in found.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        targets = set()
        for imported in _imported_names(tree, name, path.name == "__init__.py"):
            if imported in found:
                targets.add(imported)
            elif imported.rpartition(".")[0] in found and imported.startswith(package + "."):
                # ``from package.module import name``: the base module was yielded already.
                continue
        # ``from a.b import c`` yields ``a.b`` and ``a.b.c``: when ``c`` is a submodule, ``a.b`` is
        # only its parent package, which Python imports on the way, not a dependency of the code.
        targets = {t for t in targets if not any(o.startswith(t + ".") for o in targets)}
        graph[name] = targets - {name}
    return graph


def private_imports(root: Path, package: str) -> list[str]:
    """Every private name (``_x``, not a dunder) imported from a module of the package, sorted.

    Each is ``"importer: from module import _x"``; relative imports are resolved and imports
    inside functions count. A private name is its module's own business: when another module
    needs it, it is a seam between the two and gets a public name (see
    ``benchmarks/architecture_counts.py``).
    """
    found = []
    for name, path in modules(root, package).items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = _from_base(node, name, path.name == "__init__.py")
            if base != package and not base.startswith(package + "."):
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{name}: from {base} import {alias.name}")
    return sorted(found)


def top_package(module: str, package: str) -> str | None:
    """The layered package ``module`` is in (``method``, ``baselines``, ...), or ``None``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == package and parts[1] in PACKAGES else None


def layer(module: str, package: str) -> int | None:
    top = top_package(module, package)
    return None if top is None else next(i for i, packages in enumerate(LAYERS) if top in packages)


def upward_imports(graph: dict[str, set[str]], package: str) -> list[str]:
    """Every import of a higher layer, or of the top-level facade, as ``"a -> b (why)"``."""
    bad = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            if target == package and source != f"{package}.__main__":
                bad.append(f"{source} -> {target} (imports the top-level package)")
            src_layer, dst_layer = layer(source, package), layer(target, package)
            if src_layer is not None and dst_layer is not None and dst_layer > src_layer:
                why = f"{top_package(source, package)} imports {top_package(target, package)}"
                bad.append(f"{source} -> {target} ({why})")
    return bad


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


PACKAGE_ROOT = Path(searchain_graph.__file__).parent
GRAPH = import_graph(PACKAGE_ROOT, "searchain_graph")


def test_every_module_belongs_to_a_layer() -> None:
    outside = [m for m in GRAPH if layer(m, "searchain_graph") is None]
    assert sorted(outside) == [
        "searchain_graph",
        "searchain_graph.__main__",
        "searchain_graph._files",
        "searchain_graph._text",
        "searchain_graph._version",
    ]
    for beneath in ("_files", "_text"):  # beneath every layer: they import none of them
        assert GRAPH[f"searchain_graph.{beneath}"] == set(), beneath
    for name in PACKAGES:
        assert f"searchain_graph.{name}" in GRAPH, name


def test_the_baselines_sit_beside_the_method() -> None:
    """``baselines`` is on ``method``'s layer: it builds on SearChain's steps, never on what runs it."""
    assert layer("searchain_graph.baselines", "searchain_graph") == layer("searchain_graph.method", "searchain_graph")
    assert "searchain_graph.evaluation.baselines" not in GRAPH
    baselines = {m: t for m, t in GRAPH.items() if top_package(m, "searchain_graph") == "baselines"}
    imported = {top_package(t, "searchain_graph") for targets in baselines.values() for t in targets}
    assert imported <= {"llms", "ir", "method", "baselines"}, imported
    searchain = [
        f"{m} -> {t}"
        for m, targets in GRAPH.items()
        if top_package(m, "searchain_graph") == "method"
        for t in targets
        if top_package(t, "searchain_graph") == "baselines"
    ]
    assert searchain == [], "SearChain imports a baseline"


def test_no_import_cycles() -> None:
    assert cycles(GRAPH) == []


def test_lower_layers_never_import_higher_ones() -> None:
    assert upward_imports(GRAPH, "searchain_graph") == []


def test_the_checks_catch_a_cycle_and_an_upward_import(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    for folder in ("llms", "ir", "method"):
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text("")
    (root / "__init__.py").write_text("from pkg.method.graph import build\n")
    (root / "llms" / "hub.py").write_text("def load():\n    from pkg.method.graph import build\n")
    (root / "method" / "graph.py").write_text("from pkg.llms import hub\nfrom . import nodes\n")
    (root / "method" / "nodes.py").write_text("from .graph import build\n")
    (root / "ir" / "index.py").write_text("import pkg\n")
    graph = import_graph(root, "pkg")
    assert graph["pkg.method.graph"] == {"pkg.llms.hub", "pkg.method.nodes"}
    assert cycles(graph) == [["pkg.llms.hub", "pkg.method.graph", "pkg.method.nodes"]]
    assert upward_imports(graph, "pkg") == [
        "pkg.ir.index -> pkg (imports the top-level package)",
        "pkg.llms.hub -> pkg.method.graph (llms imports method)",
    ]


def test_no_module_imports_a_private_name_of_another() -> None:
    found = private_imports(PACKAGE_ROOT, "searchain_graph")
    assert not found, "private names imported across modules (make each public, or keep it in its module):\n" + (
        "\n".join(found)
    )


def test_the_private_import_check_resolves_relative_imports_and_spares_dunders(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    (root / "ir").mkdir(parents=True)
    (root / "__init__.py").write_text("from pkg._version import __version__\n")
    (root / "_version.py").write_text("__version__ = '1'\n")
    (root / "ir" / "__init__.py").write_text("from ._spans import cut\n")
    (root / "ir" / "_spans.py").write_text("def cut(): ...\ndef _window(): ...\n")
    (root / "ir" / "reader.py").write_text(
        "from os import _exit\nfrom . import _spans\nfrom ._spans import _window, cut\n"
        "def read():\n    from pkg.ir._spans import _window as w\n"
    )
    assert private_imports(root, "pkg") == [
        "pkg.ir.reader: from pkg.ir import _spans",
        "pkg.ir.reader: from pkg.ir._spans import _window",
        "pkg.ir.reader: from pkg.ir._spans import _window",
    ]


def test_public_api_still_imports_from_the_top_level() -> None:
    assert PUBLIC_API <= set(searchain_graph.__all__)
    for name in searchain_graph.__all__:
        assert getattr(searchain_graph, name) is not None, name
