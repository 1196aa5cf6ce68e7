"""Counts behind ``docs/architecture.md``'s before/after table, for any checkout of the package.

Prints, for the package under ``SRC`` (default: this checkout's ``src``): the lines of the modules
that write nodes (``method/`` and ``baselines/``, which was ``evaluation/baselines/`` before), the
functions defined per SearChain step in ``method/nodes.py`` (a function belongs to a step when its
name holds the step's name, or when it is only called from that step's functions), and every
private name (``_x``) imported from another module of the package. Run it on the commit before a
restructure and after::

    git worktree add /tmp/before <commit>
    python benchmarks/architecture_counts.py /tmp/before/src
    python benchmarks/architecture_counts.py
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

STEPS = ("coq_generation", "ir_check", "feedback", "tracing")


def lines(root: Path, parts: tuple[str, ...]) -> int:
    """Non-empty lines of the Python modules under ``root/part`` for each part."""
    total = 0
    for part in parts:
        for path in sorted((root / part).rglob("*.py")):
            total += sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return total


def private_imports(root: Path, package: str = "searchain_graph") -> list[str]:
    """``module: from other import _name`` for every private name imported across modules."""
    found = []
    for path in sorted((root / package).rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package):
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        found.append(f"{module}: from {node.module} import {alias.name}")
    return found


def functions_per_step(nodes: Path) -> dict[str, list[str]]:
    """The functions of ``nodes.py`` that make up each SearChain step (see the module docstring)."""
    tree = ast.parse(nodes.read_text(encoding="utf-8"))
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    calls: dict[str, set[str]] = {}
    for name, fn in defs.items():
        called = set()
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Call):
                target = sub.func
                called.add(target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", ""))
        calls[name] = called & set(defs)
    out: dict[str, list[str]] = {}
    for step in STEPS:
        own = {n for n in defs if step in n}
        callers_of = {n: {c for c, called in calls.items() if n in called} for n in defs}
        grew = True
        while grew:
            more = {n for n in defs if n not in own and callers_of[n] and callers_of[n] <= own}
            grew = bool(more)
            own |= more
        out[step] = sorted(own)
    return out


def main(argv: list[str]) -> int:
    """Print the counts for the ``src`` directory given (default: this checkout's)."""
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "src"
    package = root / "searchain_graph"
    print(f"source: {root}")
    print(f"lines (non-empty) of method/: {lines(package, ('method',))}")
    baselines = "baselines" if (package / "baselines").is_dir() else "evaluation/baselines"  # moved up later
    print(f"lines (non-empty) of {baselines}/: {lines(package, (baselines,))}")
    for step, names in functions_per_step(package / "method" / "nodes.py").items():
        print(f"functions of step {step}: {len(names)} ({', '.join(names)})")
    private = private_imports(root)
    print(f"private names imported across modules: {len(private)}")
    for line in private:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
