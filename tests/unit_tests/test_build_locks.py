"""Build locks of colbert-ai's C++ extensions: a killed compile must not make the next one wait forever.

torch's ``cpp_extension.load`` waits as long as its ``lock`` file exists; a compile killed midway
leaves that file behind. These tests use real processes and real files, and no compiler.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from searchain_graph.ir import _ragatouille_compat as compat

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the OS lock is fcntl's")


@pytest.fixture
def build_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    return tmp_path


def _claim_in_child(root: Path, then: str) -> subprocess.Popen[str]:
    """A process that claims extension ``x``, creates torch's lock as a compile would, then runs ``then``."""
    code = textwrap.dedent(
        f"""
        import os, signal, sys, time
        from searchain_graph.ir import _ragatouille_compat as compat
        with compat._build_claimed(("x",)):
            lock = os.path.join(compat._build_directory("x"), "lock")
            open(lock, "w").close()
            print("claimed", flush=True)
            {then}
        """
    )
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(root)}
    child = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "claimed"
    return child


def test_a_lock_left_by_a_killed_compile_is_removed_at_once(build_root: Path, caplog: pytest.LogCaptureFixture) -> None:
    child = _claim_in_child(build_root, "os.kill(os.getpid(), signal.SIGKILL)")
    assert child.wait(timeout=60) == -signal.SIGKILL
    lock = build_root / "x" / "lock"
    assert lock.exists()
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="searchain_graph.ir.colbert"), compat._build_claimed(("x",)):
        assert not lock.exists()
    assert time.monotonic() - started < 5  # not the stale age: the claim shows whose lock it was
    assert f"removed the build lock {lock} left by a killed compile" in caplog.text


def test_a_live_compile_in_another_process_is_waited_for(build_root: Path, caplog: pytest.LogCaptureFixture) -> None:
    child = _claim_in_child(build_root, "time.sleep(1.0); os.remove(lock)")
    with caplog.at_level(logging.WARNING, logger="searchain_graph.ir.colbert"), compat._build_claimed(("x",)):
        assert not (build_root / "x" / "lock").exists()  # it finished before this process got the folder
    assert child.wait(timeout=60) == 0
    assert "removed the build lock" not in caplog.text
    assert (build_root / "x" / compat._HOLDER_FILE).read_text() == ""  # a clean release


def test_a_lock_of_another_program_is_removed_only_once_stale(
    build_root: Path, caplog: pytest.LogCaptureFixture
) -> None:
    lock = Path(compat._build_directory("x")) / "lock"
    lock.touch()
    old = time.time() - 1000
    os.utime(lock, (old, old))
    with caplog.at_level(logging.WARNING, logger="searchain_graph.ir.colbert"), compat._build_claimed(("x",)):
        assert not lock.exists()
    assert "left by a compile that has not moved in 300 s" in caplog.text

    lock.touch()  # fresh: waited on, then taken as stale
    started = time.monotonic()
    with compat._build_claimed(("x",), stale_after_s=1.5):
        assert not lock.exists()
    assert time.monotonic() - started >= 1.0


def test_compile_extensions_claims_each_loaders_folders(build_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import types

    import torch

    seen: list[bool] = []

    class Loader:
        @classmethod
        def try_load_torch_extensions(cls, use_gpu: bool) -> None:
            holder = build_root / "y_cpp" / compat._HOLDER_FILE
            seen.append(holder.read_text().strip() == str(os.getpid()))
            cls.loaded_extensions = True

    fake = types.ModuleType("searchain_fake_loader")
    fake.Loader = Loader  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, fake.__name__, fake)
    monkeypatch.setattr(compat, "EXTENSION_LOADERS", ((fake.__name__, "Loader", ("y_cpp",)),))
    monkeypatch.setattr(compat, "import_ragatouille", lambda: None)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    stale = build_root / "y_cpp" / "lock"
    stale.parent.mkdir()
    stale.touch()
    os.utime(stale, (0, 0))
    assert compat.compile_extensions() == 1
    assert seen == [True] and not stale.exists()
