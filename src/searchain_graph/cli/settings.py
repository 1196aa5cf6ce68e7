"""SearChain's settings on the command line: one option per field of :class:`~searchain_graph.method.context.Context`.

The options, their choices and their help are read from the ``Context`` dataclass itself, so the
CLI describes no setting of its own: ``--preset paper``, ``--max-rounds 3``, ``--demonstrations
instruction``, ``--no-chain-repair``. An option left out leaves its field at the ``Context``
default (the preset's, for the adaptations).
"""

from __future__ import annotations

import argparse
import types
import typing
from dataclasses import fields
from typing import Any

from searchain_graph.method.context import Context

__all__ = ["add_context_options", "context_of", "set_fields"]

_ALIASES = {"confidence_threshold": ("--threshold",)}
"""Older spellings kept as aliases."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def add_context_options(parser: argparse.ArgumentParser, *, who: str = "", skip: tuple[str, ...] = ()) -> None:
    """One option per ``Context`` field (but ``skip``), its help the field's description prefixed with ``who``."""
    hints = typing.get_type_hints(Context)
    group = parser.add_argument_group("SearChain settings (searchain_graph.Context)")
    for f in fields(Context):
        if f.name in skip:
            continue
        kind = hints[f.name]
        union = typing.get_origin(kind) in (typing.Union, types.UnionType)
        concrete = [a for a in typing.get_args(kind) if a is not type(None)] if union else [kind]
        help_text = f"{who}{f.metadata.get('description', '')} (default: {_shown(f.default)})".replace("%", "%%")
        flags = (_flag(f.name), *_ALIASES.get(f.name, ()))
        options: dict[str, Any] = {"dest": f.name, "default": None, "help": help_text}
        base = concrete[0]
        if typing.get_origin(base) is typing.Literal:
            options["choices"] = typing.get_args(base)
        elif base is bool:
            options["action"] = argparse.BooleanOptionalAction
        elif base in (int, float):
            options["type"] = base
        group.add_argument(*flags, **options)


def _shown(default: object) -> str:
    return "the preset's" if default is None else str(default).lower() if isinstance(default, bool) else str(default)


def set_fields(args: argparse.Namespace) -> dict[str, Any]:
    """The ``Context`` fields given on the command line."""
    return {f.name: getattr(args, f.name) for f in fields(Context) if getattr(args, f.name, None) is not None}


def context_of(args: argparse.Namespace) -> Context:
    """The ``Context`` of a command's options.

    Raises:
        ValueError: an option's value is out of range (the message names the field).
    """
    return Context(**set_fields(args))
