"""How long the first ColBERT use on a CPU waits for colbert-ai's C++ extensions, one by one and side by side.

colbert-ai compiles four single-file C++ extensions (``torch.utils.cpp_extension.load``) as each
of its classes first needs one, one after another.
:func:`~searchain_graph.ir._ragatouille_compat.compile_extensions` runs the loaders in threads
instead, one per core. Each measurement is a fresh process with an empty ``TORCH_EXTENSIONS_DIR``
(nothing cached), so it is the wait of a new machine; ``--workers 1`` is colbert-ai's own order::

    python benchmarks/colbert_compile.py --workers 1 2

Needs the ``colbert`` extra, a C++ compiler and the Python headers. Nothing else should run beside it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

CHILD = (
    "import sys\n"
    "from searchain_graph.ir._ragatouille_compat import compile_extensions, import_ragatouille\n"
    "import_ragatouille()\n"
    "print(compile_extensions(workers=int(sys.argv[1])))\n"
)


def measure(workers: int) -> tuple[float, float]:
    """Return (seconds to import RAGatouille, seconds to import it and compile every extension)."""
    with tempfile.TemporaryDirectory(prefix="torch-extensions-") as root:
        env = dict(os.environ, TORCH_EXTENSIONS_DIR=root)
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "from searchain_graph.ir._ragatouille_compat import import_ragatouille as i; i()"],
            env=env,
            check=True,
        )
        imported = time.perf_counter() - start
        start = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(workers)], env=env, check=True, capture_output=True, text=True
        )
        total = time.perf_counter() - start
        loaders = out.stdout.strip().splitlines()[-1]
        if loaders != "3":
            raise SystemExit(f"expected 3 loaders to run, got {loaders!r}")
        # With TORCH_EXTENSIONS_DIR set, torch builds in ROOT/NAME.
        compiled = sorted(name for name in os.listdir(root) if name.endswith("_cpp"))
        if len(compiled) != 4:
            raise SystemExit(f"expected 4 compiled extensions, found {compiled}")
    return imported, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    print(f"{os.cpu_count()} CPU cores, Python {sys.version.split()[0]}")
    print("| workers | import (s) | import + compile 4 extensions (s) | compile alone (s) |")
    print("|---|---|---|---|")
    for workers in args.workers:
        imported, total = measure(workers)
        print(f"| {workers} | {imported:.1f} | {total:.1f} | {total - imported:.1f} |", flush=True)


if __name__ == "__main__":
    main()
