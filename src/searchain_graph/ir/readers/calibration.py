"""Where a reader's calibrated θ is saved, and where SearChain picks it up.

``searchain calibrate`` (:mod:`searchain_graph.evaluation.calibration`) chooses θ for one reader
from data; the choice is kept in a small JSON file per reader, by default in
``cache_root() / "calibration"`` (``$SEARCHAIN_CACHE``, see
:func:`searchain_graph.llms.weights.cache_root`), or in a directory the caller names.
:func:`~searchain_graph.method.graph.create_searchain_graph` reads it back with
:func:`saved_threshold` when it is given no θ.

A file belongs to a reader *and its model*: the key is the reader's ``calibration_key``
(``"llm:<chat model>"`` for :class:`~searchain_graph.ir.readers.llm.LLMReader`,
``"dpr:<model>"``, ``"extractive:<model>"``), or its class name for a reader without one. The
key is stored in the file and checked on reading, and the file name is a readable slug of the key
plus a short hash of it. A file is written beside its final name and renamed into place, so a
reader of the directory sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from searchain_graph._files import write_aside
from searchain_graph.ir.readers.base import reader_traits
from searchain_graph.llms.weights import cache_root

logger = logging.getLogger(__name__)

CALIBRATION_FORMAT = 1
"""Version of the file layout: ``{"format", "key", "threshold", "saved_at", ...details}``."""


SHIPPED_CALIBRATIONS = Path(__file__).with_name("calibrations")
"""Calibrations made for this release and shipped with it (the default LLM reader's, for one):
used for a reader with no calibration of the user's own."""


def calibration_dir() -> Path:
    """The default directory of saved thresholds: ``cache_root() / "calibration"``."""
    return cache_root() / "calibration"


def chat_model_name(llm: object) -> str:
    """A chat model's name: ``model_name``, else ``model``, else its class name.

    A local model run on another backend than the fp32 reference (ONNX int4, say) gives other
    token probabilities, so the backend is part of the name (``"SmolLM2-135M-Instruct@onnx-int4"``).
    """
    name = getattr(llm, "model_name", None) or getattr(llm, "model", None) or type(llm).__name__
    backend = getattr(llm, "backend", None)
    return f"{name}@{backend}" if isinstance(backend, str) and backend not in ("", "torch") else str(name)


def reader_key(reader: object) -> str:
    """The reader's ``calibration_key``, or its class name when it has none."""
    key = reader_traits(reader).calibration_key
    return key or type(reader).__name__


def _key(reader_or_key: object) -> str:
    return reader_or_key if isinstance(reader_or_key, str) else reader_key(reader_or_key)


def calibration_path(reader_or_key: object, directory: str | Path | None = None) -> Path:
    """The file that holds the θ of a reader (or of a key), in ``directory`` or the default one."""
    key = _key(reader_or_key)
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", key).strip("._-")[:80] or "reader"
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]
    return Path(directory if directory is not None else calibration_dir()) / f"{slug}-{digest}.json"


def save_threshold(
    reader_or_key: object,
    threshold: float,
    *,
    details: Mapping[str, Any] | None = None,
    directory: str | Path | None = None,
) -> Path:
    """Save θ for a reader: written beside the final file, then renamed into place.

    Args:
        reader_or_key: The reader (its :func:`reader_key` is used) or the key itself.
        threshold: θ, a finite number.
        details: More JSON-serialisable fields to keep with it (the rule, the table, the data).
        directory: Where to save (default :func:`calibration_dir`).

    Returns:
        The path of the file.

    Raises:
        ValueError: ``threshold`` is not a finite number.
        TypeError: ``details`` is not JSON-serialisable (nothing is written then).
    """
    threshold = float(threshold)
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    key = _key(reader_or_key)
    path = calibration_path(key, directory)
    record = {
        **(details or {}),
        "format": CALIBRATION_FORMAT,
        "key": key,
        "threshold": threshold,
        "saved_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    text = json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    return write_aside(path, text, sync=True)


def load_calibration(reader_or_key: object, *, directory: str | Path | None = None) -> dict[str, Any] | None:
    """The saved record of a reader (or key), or ``None`` when there is none or it is unusable.

    Without ``directory``, the user's own (:func:`calibration_dir`) comes first, then the one
    shipped with the package (:data:`SHIPPED_CALIBRATIONS`). An unreadable file, one with another
    key or format, or one without a finite θ is ignored with a warning: a broken cache never
    stops SearChain from running.
    """
    key = _key(reader_or_key)
    places = [Path(directory)] if directory is not None else [calibration_dir(), SHIPPED_CALIBRATIONS]
    for place in places:
        record = _read_record(key, calibration_path(key, place))
        if record is not None:
            return record
    return None


def _read_record(key: str, path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("ignoring the saved calibration %s: %s", path, exc)
        return None
    threshold = record.get("threshold") if isinstance(record, dict) else None
    if (
        not isinstance(record, dict)
        or record.get("format") != CALIBRATION_FORMAT
        or record.get("key") != key
        or not isinstance(threshold, (int, float))
        or not math.isfinite(threshold)
    ):
        logger.warning("ignoring the saved calibration %s: not a calibration of %r", path, key)
        return None
    return {**record, "path": str(path)}


def saved_threshold(reader_or_key: object, *, directory: str | Path | None = None) -> float | None:
    """The θ saved for a reader by ``searchain calibrate``, or ``None``."""
    record = load_calibration(reader_or_key, directory=directory)
    return None if record is None else float(record["threshold"])
